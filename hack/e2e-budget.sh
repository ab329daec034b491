# shellcheck shell=bash
# hack/e2e.sh --api-budget: what hangwatch costs the API server, and how
# fast it sees a frozen kubelet (issue 28). Three runs of the static pod
# against a frozen real kubelet, then a fleet of 20 hangwatch processes
# against one API server counted from its audit log for BUDGET (10m), then
# the review flood at the secure port. Its table goes in BENCHMARKS.md
# (api-budget markers).
run_budget() {
  ensure_containerd
  ensure_upgrade_containerd
  local log=$HANGWATCH_CACHE/e2e-budget.log rc=0 steady=${BUDGET:-10m} machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelet and control plane $KUBE_VERSION"
  local frozen="HANGWATCH_E2E_LONG=1 go test -count 3 -timeout 60m -v -run 'TestStaticPodKubeletFrozen\$' ./test/integration/"
  local budget="HANGWATCH_E2E_BUDGET=$steady go test -count 1 -timeout 60m -v -run 'TestAPIRequestBudget\$' ./test/integration/"
  local flood="go test -count 1 -timeout 20m -v -run 'TestSecurePortFlood\$' ./test/integration/"
  : > "$log"
  for cmd in "$frozen" "$budget" "$flood"; do
    log "running: $cmd"
    bash -c "$cmd" 2>&1 | tee -a "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)|breakdown' || true; } || rc=$?
  done
  local table
  table=$(budget_table "$log" "$machine" "$steady")
  write_benchmarks_section api-budget "## The API request budget, a frozen kubelet in seconds, a secure port that holds (issue 28)" "$table"
  log "BENCHMARKS.md updated; the full log is $log"
  return "$rc"
}

# budget_table LOG MACHINE STEADY renders the section from LOG's MEASURE lines.
budget_table() {
  local log=$1 machine=$2 steady=$3
  v() { grep -o "MEASURE $1 [0-9.]*" "$log" | tail -1 | awk '{print $3}'; }
  # fleet NAME: NAME's requests per node per minute, and per second at 5,000 nodes
  fleet() { local x; x=$(v "$1"); [ -n "$x" ] && awk -v x="$x" 'BEGIN { printf "%.2f | %.0f", x, x * 5000 / 60 }' || echo "not measured | "; }
  local breakdown
  breakdown=$(grep -o 'budget steady breakdown per node per minute: .*' "$log" | tail -1 | sed 's/^budget steady breakdown per node per minute: //')
  cat <<TABLE
<!-- api-budget:begin (written by hack/e2e.sh --api-budget) -->
Machine: $machine. Command: \`./hack/e2e.sh --api-budget\` (last run $(date -u +%Y-%m-%d)), which runs in turn
\`HANGWATCH_E2E_LONG=1 go test -count 3 -run 'TestStaticPodKubeletFrozen\$' ./test/integration/\`,
\`HANGWATCH_E2E_BUDGET=$steady go test -run 'TestAPIRequestBudget\$' ./test/integration/\` and
\`go test -run 'TestSecurePortFlood\$' ./test/integration/\`.

**A frozen kubelet** (SIGSTOP of a real kubelet; hangwatch as the shipped static pod, its
\`/healthz\` probed every second with a 2 s timeout): \`KubeletUnresponsive\` (\`KubeletNotAnswering\`)
on the Node after **$(median_of "$log" e2e_kubelet_unresponsive_after_kubelet_freeze)**; the node lifecycle controller's
\`Unknown\` after $(median_of "$log" e2e_node_unknown_after_kubelet_freeze).

**Requests to the API server per node per minute**, from its audit log, over $(v budget_steady_minutes) minutes of a
healthy fleet: 20 hangwatch processes with 20 node identities against one kube-apiserver,
one beside a real kubelet (its metrics scraped every 10 s), 19 beside a \`/healthz\` that
answers and a Lease renewed every 10 s; every secure port scraped every 15 s with the
PodMonitor's token:

| who | requests per node per minute | at 5,000 nodes, requests/s |
| --- | --- | --- |
| hangwatch, mean of the 20 | $(fleet budget_steady_hangwatch_requests_per_node_min) |
| hangwatch, the busiest of the 20 | $(fleet budget_steady_hangwatch_requests_per_node_min_max) |
| hangwatch reading the Lease every 5 s (before this issue; 2 more processes, same run) | $(fleet budget_steady_before_requests_per_node_min) |
| the real kubelet, everything it sent | $(fleet budget_steady_kubelet_requests_per_min) |
| of which its reviews of callers of its port (hangwatch's scrape is the only caller) | $(fleet budget_steady_kubelet_reviews_per_min) |

hangwatch's requests, per node per minute: $breakdown. By period, the steady state is a
Lease read every \`--lease-idle-period\` (5 min: 0.2), a status heartbeat every 5 min (a read
of the Node, to see who else writes its conditions, and a patch: 0.4) and, for each scraper
of the secure port, a TokenReview and a SubjectAccessReview every
\`--authentication-cache-ttl\` (10 min: 0.2; a window can end just before a
renewal, and then shows none): **0.8 a minute per node**, 67 requests/s at 5,000 nodes,
beside the kubelets' own.

While something is wrong on one node it reads more: a frozen kubelet (its Lease read every
5 s to time the grace period) $(v budget_frozen_kubelet_requests_per_min) requests a minute; a Lease not renewed while the
kubelet answers (possibly the whole fleet behind an overloaded API server) $(v budget_late_lease_requests_per_min) in its first 2
minutes: it is still read every idle period.

**The review flood** at one secure port (10,000 requests with made-up tokens from 32
connections, each from its own loopback address): $(grep -o 'MEASURE secure_flood_requests .*' "$log" | tail -1 | sed -E 's/^MEASURE secure_flood_requests ([0-9]+) \(([0-9]+)\/s\): 401 ([0-9]+), 429 ([0-9]+), other ([0-9]+), errors ([0-9]+).*/\1 requests (\2 a second): \3 answered 401 after a review, \4 answered 429 without one, \5 other, \6 errors/') in $(v secure_flood_duration) s.
The API server saw $(grep -o 'MEASURE secure_flood_tokenreviews .*' "$log" | tail -1 | sed -E 's/^MEASURE secure_flood_tokenreviews ([0-9]+) \((.*)\); subjectaccessreviews ([0-9]+)/\1 TokenReviews (\2) and \3 SubjectAccessReviews/'). The PodMonitor's
token, scraping every 200 ms meanwhile: $(grep -o 'MEASURE secure_flood_scrapes .*' "$log" | tail -1 | sed 's/^MEASURE secure_flood_scrapes //; s/ (first failure: .*//').
With 64 silent connections and 64 that each sent one request without a token held open, a
scrape on a new connection took $(v secure_holdup_scrape) s; the port kept $(grep -o 'MEASURE secure_holdup_connections_kept .*' "$log" | tail -1 | sed 's/^MEASURE secure_holdup_connections_kept //; s/silent \([0-9]*\) of 64, after a 401 \([0-9]*\) of 64/\1 of the 64 silent connections and \2 of the 64 refused ones/') open.
<!-- api-budget:end -->
TABLE
}

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
  local log=$HANGWATCH_CACHE/e2e-budget.log rc=0 steady=${BUDGET:-10m} machine measured
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelet and control plane $KUBE_VERSION"
  measured=$(measurements_file e2e-budget)
  local frozen="HANGWATCH_SUITE=e2e go test -count 3 -timeout 60m -v -run 'TestStaticPodKubeletFrozen\$' ./test/e2e/"
  local budget="HANGWATCH_E2E_BUDGET=$steady HANGWATCH_SUITE=e2e go test -count 1 -timeout 60m -v -run 'TestAPIRequestBudget\$' ./test/e2e/"
  local flood="go test -count 1 -timeout 20m -v -run 'TestSecurePortFlood\$' ./test/integration/"
  : > "$log"
  for cmd in "$frozen" "$budget" "$flood"; do
    log "running: $cmd"
    HANGWATCH_MEASUREMENTS=$measured bash -c "$cmd" 2>&1 | tee -a "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  done
  # the frozen kubelet's figures are the medians of its three runs
  publish_section api-budget "## The API request budget, a frozen kubelet in seconds, a secure port that holds" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "steady=$steady" -var "command=./hack/e2e.sh --api-budget"
}

#!/usr/bin/env bash
# hangwatch-remedy against one real kube-apiserver holding thousands of
# Nodes the size of real ones (40 images each), 1% of them with RuntimeHung
# True: time to the first taint and to the last, the reaction to one more
# sick node on a warm cache, the controller's memory and CPU, and its
# requests a second while nothing changes. Writes the figures into
# BENCHMARKS.md (between the remedy-scale markers).
#   ./hack/bench-remedy-scale.sh [NODES (default 5000)]
# Needs root (the integration tests' control plane). About 10 minutes for 5000.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/bench-remedy-scale.sh starts etcd and kube-apiserver"
nodes=${1:-5000}
case "$nodes" in '' | *[!0-9]*) echo "NODES must be a number, not $nodes" >&2; exit 2 ;; esac
ensure_packages
ensure_go
ensure_kube_binaries

log=$HANGWATCH_CACHE/bench-remedy-scale.log
version=$(hangwatch_version)   # before the run: the test builds hangwatch-remedy from the tree as it is then
machine="$(machine_text), control plane $KUBE_VERSION (etcd $(etcd --version 2>/dev/null | awk '/etcd Version/{print $3}'))"
# the controller runs with the Go memory limit its Deployment sets
# (manifests/overlays/remedy/deployment.yaml); it inherits the test's environment
gomemlimit=$(awk '/name: GOMEMLIMIT/{getline; print $2}' manifests/overlays/remedy/deployment.yaml)
export GOMEMLIMIT=$gomemlimit
cmd="GOMEMLIMIT=$gomemlimit HANGWATCH_REMEDY_SCALE=$nodes go test -count 1 -timeout 60m -v -run TestRemedyScaleBenchmark ./test/integration/"
log "running: $cmd"
rc=0
HANGWATCH_REMEDY_SCALE=$nodes go test -count 1 -timeout 60m -v -run TestRemedyScaleBenchmark ./test/integration/ 2>&1 \
  | tee "$log" | { grep -E 'MEASURE|bytes of JSON|rest_client|^(---|ok|FAIL)' || true; } || rc=$?
if ! grep -q -- '--- PASS: TestRemedyScaleBenchmark' "$log"; then
  log "the benchmark did not pass (log: $log); BENCHMARKS.md left as it was"
  exit $(( rc == 0 ? 1 : rc ))
fi

m() { grep -o "MEASURE $1 [0-9.]*" "$log" | tail -1 | awk '{print $3}'; }
s() { local v; v=$(m "$1"); [ -n "$v" ] && printf '%.1f s' "$v" || echo "not measured"; }
n() { local v; v=$(m "$1"); [ -n "$v" ] && printf "%.${2:-1}f" "$v" || echo "not measured"; }
# detail NAME: the parenthesised note after a MEASURE line's figure
detail() { grep -o "MEASURE $1 [0-9.]* (.*)" "$log" | tail -1 | sed -E 's/^[^(]*\((.*)\)$/\1/'; }
node_bytes=$(grep -o 'each Node is [0-9]* bytes' "$log" | tail -1 | awk '{print $4}')
sick=$(( (nodes + 99) / 100 ))   # nodes 0, 100, 200...

table=$(cat <<TABLE
<!-- remedy-scale:begin (written by hack/bench-remedy-scale.sh) -->
Machine: $machine; hangwatch $version. Command: \`./hack/bench-remedy-scale.sh $nodes\`, which runs \`$cmd\` (last run $(date -u +%Y-%m-%d)).
One kube-apiserver (and etcd) holding $nodes Nodes, each ${node_bytes:-?} bytes of JSON (40 \`status.images\`
with a digest and a tag each, labels, addresses, capacity, node info), created by 16 parallel
admin writers in $(s remedy_scale_setup); each Node's \`RuntimeHung\` written as hangwatch writes it
(a status patch under the \`hangwatch\` field manager), False on all but $sick (1%) of them.
hangwatch-remedy runs as its manifests' ServiceAccount (RBAC and admission policy applied), with
\`maxUnhealthy: 2%\`, \`maxActionsPerMinute: 100\`, RuntimeHung \`taintAfter: 0s\`, its default
client limits (\`--kube-api-qps 10 --kube-api-burst 20\`) and the integration tests' leader
election timings (Lease 4 s, renew 3 s, retry 500 ms), and \`GOMEMLIMIT=$gomemlimit\` as its
Deployment sets (limit 256Mi; without it the peak was 272-284 MiB). Times are from the controller's start
(its exec, the binary already built); a taint is timed when a watch on the API server delivers it.
The controller plans from its cache once a second, so a reaction takes up to a second more than
the writes it makes.

| figure | value |
| --- | --- |
| node cache synced (\`/healthz\` ok, polled every 100 ms) | $(s remedy_scale_cache_synced) |
| leading (its Lease taken; \`hangwatch_remedy_leader\`, polled every 100 ms after the sync) | $(s remedy_scale_leading) |
| first decision (first taint) | **$(s remedy_scale_first_taint)** |
| all $sick sick Nodes tainted | **$(s remedy_scale_all_sick_tainted)** |
| requests from its start to the last taint | $(n remedy_scale_requests_until_all_tainted 0) ($(detail remedy_scale_requests_until_all_tainted | sed 's/^.*last taint; //')) |
| reaction: one more Node's RuntimeHung True to its taint (warm cache) | **$(s remedy_scale_reaction)** |
| VmRSS at the end | **$(n remedy_scale_vmrss_mib) MiB** ($(detail remedy_scale_vmrss_mib)) |
| CPU, user+system, since its start | $(n remedy_scale_cpu_seconds 2) s ($(detail remedy_scale_cpu_seconds | sed 's/^user+system, //')) |
| CPU over the steady 60 s window | $(n remedy_scale_steady_cpu_percent 2)% of a core |
| requests a second to the API server, steady 60 s window | **$(n remedy_scale_steady_requests_per_second 2)** (by flow schema: $(detail remedy_scale_steady_requests_per_second | sed 's/^.*by flow schema: //')) |
| every client's nodes/pods/leases/events requests a second: steady window / no controller | $(n remedy_scale_steady_apiserver_requests_per_second 2) / $(n remedy_scale_baseline_apiserver_requests_per_second 2) |

The controller's requests are counted on the API server (its \`/metrics\` has no client-go
request counter): \`apiserver_flowcontrol_dispatched_requests_total\` grown in every flow schema
but \`exempt\`, where the admin and the API server's own loopback client fall, over a window in
which the test sends nothing but its two \`/metrics\` reads.
<!-- remedy-scale:end -->
TABLE
)
write_benchmarks_section remedy-scale "## hangwatch-remedy at scale: thousands of Nodes on one kube-apiserver" "$table"
log "BENCHMARKS.md updated; the full log is $log"
exit "$rc"

#!/usr/bin/env bash
# Writes the footprint table into BENCHMARKS.md, between
# <!-- footprint:begin --> and <!-- footprint:end -->, from the logs of
# TestFootprintBesideNPD and of the healthy 100-pod static-pod run
# (hack/bench.sh runs both and calls this).
#   ./hack/footprint-table.sh FOOTPRINT_LOG HEALTHY_LOG MACHINE
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
fp_log=$1 healthy_log=$2 machine=$3
rows=$(sed -n '/footprint beside node-problem-detector/,/^--- /p' "$fp_log" | grep -E '^ *\|' | sed 's/^ *//')
[ -n "$rows" ] || { echo "footprint-table: no table in $fp_log" >&2; exit 1; }
window=$(grep -o 'footprint beside node-problem-detector, [^:]*' "$fp_log" | tail -1 | sed 's/footprint beside node-problem-detector, //')
m() { grep -o "MEASURE $1 [0-9.]*" "$healthy_log" | tail -1 | awk '{print $3}'; }
healthy="not measured (see $healthy_log)"
if [ -n "$(m e2e_footprint_rss_steady_mib)" ]; then
  healthy="VmRSS $(m e2e_footprint_rss_steady_mib) MiB at the end (peak $(m e2e_footprint_rss_peak_mib)), RssAnon $(m e2e_footprint_rss_anon_steady_mib) MiB (peak $(m e2e_footprint_rss_anon_peak_mib)), CPU $(m e2e_footprint_cpu_percent_of_a_core)% of a core, CRI calls $(m e2e_cri_calls_per_min_hangwatch)/min against the kubelet's $(m e2e_cri_calls_per_min_kubelet)/min ($(m e2e_cri_calls_hangwatch_share_percent)%)"
fi
block=$(cat <<BLOCK
<!-- footprint:begin (written by hack/footprint-table.sh from hack/bench.sh) -->
Machine: $machine. Code: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d). Both processes
scraped every 15 s; $window. Command: \`HANGWATCH_BENCH=1 HANGWATCH_NPD_BIN=... go test -count 1 -v -timeout 20m -run TestFootprintBesideNPD ./test/integration/\`.

$rows

The healthy static-pod run (\`HANGWATCH_E2E_HEALTHY=5m go test -count 1 -v -run TestStaticPodHealthyNodeRaisesNothing ./test/integration/\`, 100 pods, churn, half the cores busy): $healthy.
<!-- footprint:end -->
BLOCK
)
write_benchmarks_section footprint "### Footprint beside node-problem-detector, as hack/bench.sh last measured it" "$block"
echo "footprint table written to BENCHMARKS.md"

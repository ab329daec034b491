# shellcheck shell=bash
# hack/e2e.sh --remedy: the two-node freeze with and without
# hangwatch-remedy, and its table in BENCHMARKS.md (remedy markers).
run_remedy() {
  ensure_containerd
  local log=$HANGWATCH_CACHE/e2e-remedy.log rc=0
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelets and control plane $KUBE_VERSION"
  local cmd="HANGWATCH_E2E_LONG=1 go test -count 1 -timeout 40m -v -run 'TestTwoNodeFreeze' ./test/integration/"
  log "running: $cmd"
  HANGWATCH_E2E_LONG=1 go test -count 1 -timeout 40m -v -run 'TestTwoNodeFreeze' ./test/integration/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  m() { grep -o "MEASURE $1 [0-9.]*" "$log" | tail -1 | awk '{print $3}'; }
  s() { local v; v=$(m "$1"); [ -n "$v" ] && printf '%.1f s' "$v" || echo "not measured"; }
  local table
  table=$(cat <<TABLE
<!-- remedy:begin (written by hack/e2e.sh --remedy) -->
Machine: $machine. Command: \`./hack/e2e.sh --remedy\`, which runs \`$cmd\` (last run $(date -u +%Y-%m-%d)).
Two nodes, each a real kubelet on its own containerd with hangwatch as the shipped static pod;
a Deployment of two pause replicas spread over them with a PodDisruptionBudget (minAvailable 1);
node A's containerd frozen (SIGSTOP). hangwatch-remedy runs the shipped policy
(\`manifests/overlays/remedy/config.yaml\`: RuntimeHung taints at once, evicts after 45 s).

| path | RuntimeHung on A | A tainted | A's pod evicted | replacement Running on B | A untainted after the thaw |
| --- | --- | --- | --- | --- | --- |
| with hangwatch-remedy | $(s e2e_two_node_remedy_runtime_hung_after_freeze) | $(s e2e_two_node_remedy_taint_after_freeze) | $(s e2e_two_node_remedy_eviction_after_freeze) | **$(s e2e_two_node_remedy_replacement_running_after_freeze)** | $(s e2e_two_node_remedy_untaint_after_thaw) |
| Kubernetes' own path (baseline) | $(s e2e_two_node_baseline_runtime_hung_after_freeze) | (not-ready NoExecute taint after Ready=False) | $(s e2e_two_node_baseline_eviction_after_freeze) | **$(s e2e_two_node_baseline_replacement_running_after_freeze)** | |

Times are from the freeze. No pod created after the freeze was scheduled to A in either run.
<!-- remedy:end -->
TABLE
)
  write_benchmarks_section remedy "## Early recovery: hangwatch-remedy on two nodes (issue 19)" "$table"
  log "BENCHMARKS.md updated; the full log is $log"
  return "$rc"
}

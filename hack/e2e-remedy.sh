# shellcheck shell=bash
# hack/e2e.sh --remedy: the two-node freeze with and without
# hangwatch-remedy, and its table in BENCHMARKS.md (remedy markers).
run_remedy() {
  ensure_containerd
  local log=$HANGWATCH_CACHE/e2e-remedy.log rc=0
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelets and control plane $KUBE_VERSION"
  local cmd="HANGWATCH_SUITE=e2e go test -count 1 -timeout 40m -v -run 'TestTwoNodeFreeze' ./test/e2e/"
  local measured; measured=$(measurements_file e2e-remedy)
  log "running: $cmd"
  HANGWATCH_MEASUREMENTS=$measured HANGWATCH_SUITE=e2e go test -count 1 -timeout 40m -v -run 'TestTwoNodeFreeze' ./test/e2e/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  publish_section remedy "## Early recovery: hangwatch-remedy on two nodes" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd"
}

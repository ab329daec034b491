# shellcheck shell=bash
# hack/e2e.sh --repair: the repair rung against a real systemd, three runs,
# and its table in BENCHMARKS.md (repair markers). Medians of the runs.
run_repair() {
  ensure_containerd
  local log=$HANGWATCH_CACHE/e2e-repair.log rc=0 runs=${REPAIR_RUNS:-3}
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION under systemd $(/lib/systemd/systemd --version 2>/dev/null | awk 'NR==1{print $2}'), kubelet and control plane $KUBE_VERSION"
  local run='TestRepairRestartsAHungContainerd|TestRepairRestartsAFrozenKubelet|TestAThawIsSeenWithin3s'
  local cmd="go test -count $runs -timeout 60m -v -run '$run' ./test/integration/"
  local measured; measured=$(measurements_file e2e-repair)
  log "running: $cmd"
  HANGWATCH_MEASUREMENTS=$measured go test -count "$runs" -timeout 60m -v -run "$run" ./test/integration/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  # the table holds the medians of the runs
  publish_section repair "## The repair rung: a hung runtime or kubelet restarted through a real systemd" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd"
}

# hack/e2e.sh --ladder: two real nodes, node A's containerd and kubelet under
# a real systemd, every rung on (hangwatch-remedy's taint and eviction,
# hangwatch's repair); a freeze the restart cures, and one it does not.
run_ladder() {
  ensure_containerd
  local log=$HANGWATCH_CACHE/e2e-ladder.log rc=0
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION under systemd $(/lib/systemd/systemd --version 2>/dev/null | awk 'NR==1{print $2}'), kubelets and control plane $KUBE_VERSION"
  local cmd="HANGWATCH_SUITE=e2e go test -count 1 -timeout 40m -v -run 'TestTwoNodeLadder' ./test/e2e/"
  local measured; measured=$(measurements_file e2e-ladder)
  log "running: $cmd"
  HANGWATCH_MEASUREMENTS=$measured HANGWATCH_SUITE=e2e go test -count 1 -timeout 40m -v -run 'TestTwoNodeLadder' ./test/e2e/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)|kept:' || true; } || rc=$?
  publish_section ladder "## The recovery ladder on two nodes: taint, restart, evict" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd"
}

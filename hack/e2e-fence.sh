# hack/e2e.sh --fence: the fence on two real kubelets (issue 39), sourced
# by hack/e2e.sh.

# run_fence runs the fence's two-node freezes (web-0 without a volume, and
# with a ReadWriteOnce volume of the harness's CSI driver) FENCE_RUNS times
# (3) and Kubernetes' own path once, and writes the table between the
# fence markers.
run_fence() {
  ensure_containerd
  ensure_csi
  local log=$HANGWATCH_CACHE/e2e-fence.log rc=0 runs=${FENCE_RUNS:-3}
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelets (pod cgroups, cgroupfs) and control plane $KUBE_VERSION"
  local measured; measured=$(measurements_file e2e-fence)
  local cmd="HANGWATCH_SUITE=e2e go test -count $runs -timeout 60m -v -run 'TestFenceMovesAStatefulSetPod(WithItsVolume)?$' ./test/e2e/"
  local base="HANGWATCH_SUITE=e2e go test -count 1 -timeout 30m -v -run 'TestFenceBaseline' ./test/e2e/"
  log "running: $cmd; then $base"
  { HANGWATCH_MEASUREMENTS=$measured HANGWATCH_SUITE=e2e go test -count "$runs" -timeout 60m -v -run 'TestFenceMovesAStatefulSetPod(WithItsVolume)?$' ./test/e2e/ &&
    HANGWATCH_MEASUREMENTS=$measured HANGWATCH_SUITE=e2e go test -count 1 -timeout 30m -v -run 'TestFenceBaseline' ./test/e2e/; } 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)|web-0 was' || true; } || rc=$?
  publish_section fence "## The fence on two nodes: a StatefulSet pod elsewhere without a reboot" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd" -var "baseline=$base"
}

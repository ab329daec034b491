# shellcheck shell=bash
# hack/e2e.sh --write-path: PodStartStuck against a real kubelet through
# the CRI fault proxy (test/integration/pod_start_stuck_test.go): each
# step of a pod's start held in turn, on containerd and CRI-O, a runtime
# handler and a CNI plugin that hang inside containerd, and the normal
# waits beside 50 pods started at once (watched for 3 minutes), and the
# opt-in probe; three runs (WRITE_PATH_RUNS), and the table in
# BENCHMARKS.md (write-path markers).
run_write_path() {
  ensure_containerd
  ensure_crio
  local log=$HANGWATCH_CACHE/e2e-write-path.log rc=0 runs=${WRITE_PATH_RUNS:-3}
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, CRI-O $CRIO_VERSION, kubelets and control plane $KUBE_VERSION"
  local run='TestPodStart(Stuck(SeesEachHeldStep|OnCRIO|SeesAHandlerAndANetworkThatHang|RaisesNothingForNormalWaits)|ProbeSeesAHungSandboxWithNoPodStarting)$'
  local cmd="HANGWATCH_NORMAL_WAITS=3m go test -count $runs -timeout 60m -v -run '$run' ./test/integration/"
  local measured; measured=$(measurements_file e2e-write-path)
  log "running: $cmd"
  HANGWATCH_NORMAL_WAITS=3m HANGWATCH_MEASUREMENTS=$measured go test -count "$runs" -timeout 60m -v -run "$run" ./test/integration/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  publish_section write-path "## The write path" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd"
}

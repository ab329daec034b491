#!/usr/bin/env bash
# End to end on a real node: hangwatch as the shipped static pod beside a
# real kubelet (through the CRI fault proxy), kube-controller-manager and
# kube-apiserver.
#   ./hack/e2e.sh [KUBELET CONTAINERD] [HEALTHY_DURATION (default 10m)]
#       every hang scenario and a healthy run with 100 pods on one pair
#       (default: the tested stack, kubelet v1.37.2 and containerd v2.3.7);
#       writes the table of lead times and the footprint into BENCHMARKS.md
#       (between the e2e markers). About 35 minutes.
#   ./hack/e2e.sh --remedy
#       two real nodes (two kubelets, each on its own containerd, hangwatch as
#       the static pod on each, kube-scheduler and kube-controller-manager):
#       freeze node A's containerd with hangwatch-remedy and without it (the
#       baseline, Kubernetes' own path) and time the replacement of A's pod
#       on B; writes the table between the remedy markers. About 12 minutes.
#   ./hack/e2e.sh --repair
#       the repair rung against a real systemd supervising containerd and
#       the kubelet (test/integration/repair_{containerd,kubelet}_test.go) and
#       the thaw rounds (thaw_test.go), three runs
#       (REPAIR_RUNS): the freeze, restart and clear times, medians, into
#       BENCHMARKS.md between the repair markers. About 18 minutes.
#   ./hack/e2e.sh --ladder
#       two real nodes, A's containerd and kubelet under a real systemd,
#       every rung on (hangwatch-remedy's taint and eviction, repair's
#       restart): a freeze the restart cures (every pod on A kept) and one
#       it does not (the budget, then the eviction); the table between the
#       ladder markers. About 10 minutes.
#   ./hack/e2e.sh --fence
#       two real kubelets with pod cgroups, hangwatch with the fence on
#       (repair off) and hangwatch-remedy with fence.enabled: A's containerd
#       frozen for good, a one-replica StatefulSet's web-0 moved to B by the
#       fence, three runs (FENCE_RUNS), then Kubernetes' own path once (where
#       web-0 is 10 minutes later); the table between the fence markers.
#       About 20 minutes.
#   ./hack/e2e.sh --installs
#       hangwatch as shipped, from its image (hack/image.sh), as pods on
#       real kubelets: the overlays with kubectl apply -k and the chart
#       with helm install, each: a 30 s freeze the repair pod's restart
#       cures (every pod kept), the whole ladder to the fence (a hang no
#       restart cures: web-0 on B), the uninstall; the ladder again with
#       hangwatch as binaries. Three runs (INSTALLS_RUNS); the table
#       between the installs markers. About 40 minutes.
#   ./hack/e2e.sh --alerts
#       the alert path: a real Prometheus scraping hangwatch's secure port
#       as the shipped PodMonitor does, the shipped PrometheusRule, a real
#       Alertmanager and a webhook receiver; node A's containerd and node
#       B's kubelet frozen, three runs (ALERT_RUNS): the time from the
#       freeze to each page and from the thaw to its resolution, medians,
#       into BENCHMARKS.md between the alerts markers. About 20 minutes.
#   ./hack/e2e.sh --write-path
#       PodStartStuck on a real kubelet through the CRI fault proxy: each
#       step of a pod's start held in turn (RunPodSandbox, CreateContainer,
#       StartContainer), and the normal waits beside 50 pods started at
#       once (none may raise it); three runs (WRITE_PATH_RUNS), medians
#       into BENCHMARKS.md between the write-path markers. About 10 minutes.
#   ./hack/e2e.sh --api-budget
#       what hangwatch costs the API server (issue 28): a frozen real kubelet
#       under the static pod, three runs; 20 hangwatch processes with 20
#       node identities against one API server, counted from its audit log
#       for BUDGET (10m); the review flood at the secure port. The table
#       goes between the api-budget markers. About 25 minutes.
#   ./hack/e2e.sh --matrix [HEALTHY_DURATION (default 1m)]
#       for each kubelet/runtime pair of E2E_MATRIX: the frozen-runtime
#       lead, the ListPodSandbox-hang lead and a healthy run with 30 pods;
#       writes one row per pair into BENCHMARKS.md (between the matrix
#       markers), keeping the rows of pairs not run. About 10 minutes a
#       pair; E2E_MATRIX="v1.35.4 v2.1.9" runs only the pairs it names.
# Needs root. The control plane is always KUBE_VERSION; a row's kubelet is
# built alone (kubelets may be up to three minors older than the API server).
# E2E_RUN=<go test -run pattern> runs only some scenarios and adds their
# figures to the last full run's before the table is written again.
# Every mode runs go test on the e2e suite, test/e2e, with HANGWATCH_SUITE=e2e
# (docs/testing.md; --repair and --api-budget correctness tests too), and
# renders its table with hack/benchtable from the measurements the tests
# recorded ($HANGWATCH_CACHE/<mode>.jsonl).
source "$(dirname "$0")/lib.sh"
export HANGWATCH_TEST_PARALLEL=1   # what runs here measures: the integration tests one at a time (docs/testing.md)
cd "$ROOT"
need_root "hack/e2e.sh starts containerd and a kubelet"
# Whatever ends it (Ctrl-C, SIGTERM, SIGHUP, its output piped to a tee
# that is gone), the run's processes, mounts and temp dirs are swept
# (run_scope in lib.sh): a go test binary killed by Ctrl-C leaves
# containerd's shims and the pods behind.
run_scope e2e
# KUBELET RUNTIME [GATES] rows; RUNTIME is a containerd version or
# crio-<version>; GATES are the kubelet's --feature-gates. Every supported
# pair: kubelets 1.36 and 1.37 want containerd 2.2 or later, so containerd
# 2.1 runs under kubelet 1.35 only. CRI-O's minor follows the kubelet's;
# the module proxy serves 1.36 alone (1.35.x and 1.37.x are refused), so
# it runs under its own kubelet 1.36 and under the control plane's 1.37.
E2E_MATRIX=${E2E_MATRIX:-"v1.37.2 v2.3.7
v1.37.2 v2.4.2 CRIListStreaming=true
v1.37.2 v2.4.2 EventedPLEG=true
v1.37.2 v2.2.9
v1.36.3 v2.4.2 CRIListStreaming=true
v1.36.3 v2.3.7
v1.36.3 v2.2.9 EventedPLEG=true
v1.35.4 v2.4.2
v1.35.4 v2.3.7
v1.35.4 v2.2.9
v1.35.4 v2.1.9
v1.36.3 crio-v1.36.3
v1.37.2 crio-v1.36.3"}
ensure_packages
ensure_go
ensure_kube_binaries
if [ "${1:-}" = --remedy ]; then
  source "$ROOT/hack/e2e-remedy.sh"
  run_remedy
  exit $?
fi
if [ "${1:-}" = --repair ]; then
  source "$ROOT/hack/e2e-repair.sh"
  run_repair
  exit $?
fi
if [ "${1:-}" = --alerts ]; then
  source "$ROOT/hack/e2e-alerts.sh"
  run_alerts
  exit $?
fi
if [ "${1:-}" = --write-path ]; then
  source "$ROOT/hack/e2e-writepath.sh"
  run_write_path
  exit $?
fi
if [ "${1:-}" = --api-budget ]; then
  source "$ROOT/hack/e2e-budget.sh"
  run_budget
  exit $?
fi
if [ "${1:-}" = --ladder ]; then
  source "$ROOT/hack/e2e-repair.sh"
  run_ladder
  exit $?
fi
if [ "${1:-}" = --fence ]; then
  source "$ROOT/hack/e2e-fence.sh"
  run_fence
  exit $?
fi
if [ "${1:-}" = --installs ]; then
  source "$ROOT/hack/e2e-installs.sh"
  run_installs
  exit $?
fi
if [ "${1:-}" = --matrix ]; then
  shift
  source "$ROOT/hack/e2e-matrix.sh"
  run_matrix "${1:-1m}"
  exit $?
fi
if [ $# -ge 2 ] && [[ "$1" == v1.* ]]; then
  ensure_kubelet "$1"
  export HANGWATCH_KUBELET_BIN="$HANGWATCH_CACHE/kube-$1/kubelet"
  CONTAINERD_VERSION=$2
  shift 2
fi
ensure_containerd
ensure_upgrade_containerd
kubelet_version=$("${HANGWATCH_KUBELET_BIN:-$HANGWATCH_KUBE_BIN/kubelet}" --version | awk '{print $2}')
healthy=${1:-10m}
log=$HANGWATCH_CACHE/e2e.log
machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelet $kubelet_version, control plane $KUBE_VERSION"
run=${E2E_RUN:-TestStaticPod}
cmd="HANGWATCH_E2E_HEALTHY=$healthy HANGWATCH_SUITE=e2e go test -p 1 -count 1 -timeout 90m -v -run '$run' ./test/integration/ ./test/e2e/"
log "running: $cmd"
tee_args=()
measured=$HANGWATCH_CACHE/e2e.jsonl
if [ -n "${E2E_RUN:-}" ]; then
  tee_args=(-a)   # the figures of the scenarios run again are added; the table takes the latest
else
  measured=$(measurements_file e2e)
fi
# A failed scenario fails the table too (benchtable names what it did not
# measure): BENCHMARKS.md is then left as it was, and the script exits
# with go test's status.
go_rc=0
HANGWATCH_MEASUREMENTS=$measured HANGWATCH_E2E_HEALTHY=$healthy HANGWATCH_SUITE=e2e go test -p 1 -count 1 -timeout 90m -v -run "$run" ./test/integration/ ./test/e2e/ 2>&1 \
  | tee "${tee_args[@]}" "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)|kubelet:|hangwatch:' || true; } || go_rc=$?
rc=0
publish_section e2e "## End to end: the static pod against the kubelet and the controller" "$log" "$go_rc" "$measured" \
  -var "machine=$machine" -var "script=./hack/e2e.sh $kubelet_version $CONTAINERD_VERSION $healthy" \
  -var "command=HANGWATCH_E2E_HEALTHY=$healthy HANGWATCH_SUITE=e2e go test -p 1 -count 1 -timeout 90m -v -run TestStaticPod ./test/integration/ ./test/e2e/" \
  -var "containerd=$CONTAINERD_VERSION" -var "containerd_upgrade=$CONTAINERD_UPGRADE_VERSION" -var "healthy=$healthy" || rc=$?
exit "$rc"

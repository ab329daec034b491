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
#       the kubelet (test/integration/repair*_test.go), three runs
#       (REPAIR_RUNS): the freeze, restart and clear times, medians, into
#       BENCHMARKS.md between the repair markers. About 12 minutes.
#   ./hack/e2e.sh --ladder
#       two real nodes, A's containerd and kubelet under a real systemd,
#       every rung on (hangwatch-remedy's taint and eviction, repair's
#       restart): a freeze the restart cures (every pod on A kept) and one
#       it does not (the budget, then the eviction); the table between the
#       ladder markers. About 10 minutes.
#   ./hack/e2e.sh --api-budget
#       what hangwatch costs the API server (issue 28): a frozen real kubelet
#       under the static pod, three runs; 20 hangwatch processes with 20
#       node identities against one API server, counted from its audit log
#       for BUDGET (10m); the review flood at the secure port. The table
#       goes between the api-budget markers. About 25 minutes.
#   ./hack/e2e.sh --matrix [HEALTHY_DURATION (default 1m)]
#       for each kubelet/containerd pair of E2E_MATRIX: the frozen-runtime
#       lead, the ListPodSandbox-hang lead and a healthy run with 30 pods;
#       writes one row per pair into BENCHMARKS.md (between the matrix
#       markers), keeping the rows of pairs not run. About 10 minutes a
#       pair; E2E_MATRIX="v1.35.4 v2.1.9" runs only the pairs it names.
# Needs root. The control plane is always KUBE_VERSION; a row's kubelet is
# built alone (kubelets may be up to three minors older than the API server).
# E2E_RUN=<go test -run pattern> runs only some scenarios and adds their
# figures to the last full run's log before the table is written again.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/e2e.sh starts containerd and a kubelet"
# KUBELET CONTAINERD [GATES] rows; GATES are the kubelet's --feature-gates.
# Every supported pair: kubelets 1.36 and 1.37 want containerd 2.2 or later,
# so containerd 2.1 runs under kubelet 1.35 only.
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
v1.35.4 v2.1.9"}
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
cmd="HANGWATCH_E2E_LONG=1 HANGWATCH_E2E_HEALTHY=$healthy go test -count 1 -timeout 90m -v -run '$run' ./test/integration/"
log "running: $cmd"
tee_args=()
[ -n "${E2E_RUN:-}" ] && tee_args=(-a)
# A failed scenario still leaves the others' figures: the table is written
# first and the script then exits with go test's status.
rc=0
HANGWATCH_E2E_LONG=1 HANGWATCH_E2E_HEALTHY=$healthy go test -count 1 -timeout 90m -v -run "$run" ./test/integration/ 2>&1 \
  | tee "${tee_args[@]}" "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)|kubelet:|hangwatch:' || true; } || rc=$?
m() { grep -o "MEASURE $1 [0-9.]*" "$log" | tail -1 | awk '{print $3}'; }
s() { local v; v=$(m "$1"); [ -n "$v" ] && printf '%.1f s' "$v" || echo "not measured"; }
# notready NAME: the kubelet's Ready=False after a PLEG-path hang, or that it stayed Ready
notready() {
  local v; v=$(m "e2e_kubelet_ready_false_after_$1_hang")
  if [ -n "$v" ]; then printf 'Ready=False after %.1f s' "$v"
  elif [ -n "$(m "e2e_kubelet_still_ready_after_$1_hang_seconds")" ]; then
    printf 'still Ready after %s s: its own call times out at 2 min, the relist then completes, the 3 min threshold is never passed' "$(m "e2e_kubelet_still_ready_after_$1_hang_seconds")"
  else echo "not measured"; fi
}
lead() { local v; v=$(m "e2e_lead_pleg_unhealthy_before_not_ready_$1"); [ -n "$v" ] && printf '%.1f s' "$v" || echo "no NotReady"; }
table=$(cat <<TABLE
<!-- e2e:begin (written by hack/e2e.sh) -->
Machine: $machine. Command: \`./hack/e2e.sh $kubelet_version $CONTAINERD_VERSION $healthy\`, which runs \`HANGWATCH_E2E_LONG=1 HANGWATCH_E2E_HEALTHY=$healthy go test -count 1 -timeout 90m -v -run TestStaticPod ./test/integration/\` (last run $(date -u +%Y-%m-%d)).

| scenario | hangwatch condition on the Node | kubelet Ready=False / controller Unknown | lead |
| --- | --- | --- | --- |
| containerd frozen (SIGSTOP) | RuntimeHung after $(s e2e_runtime_hung_on_node_after_freeze) | Ready=False after $(s e2e_kubelet_ready_false_after_freeze) | $(s e2e_lead_runtime_hung_before_not_ready) |
| ListPodSandbox hangs (proxy) | PLEGUnhealthy after $(s e2e_pleg_unhealthy_after_list_pod_sandbox_hang) | $(notready list_pod_sandbox) | $(lead list_pod_sandbox) |
| ContainerStatus of one container hangs (proxy) | PLEGUnhealthy after $(s e2e_pleg_unhealthy_after_container_status_hang) | $(notready container_status) | $(lead container_status) |
| PodSandboxStatus of one sandbox hangs (proxy) | PLEGUnhealthy after $(s e2e_pleg_unhealthy_after_pod_sandbox_status_hang) | $(notready pod_sandbox_status) | $(lead pod_sandbox_status) |
| kubelet frozen (SIGSTOP) | KubeletUnresponsive after $(s e2e_kubelet_unresponsive_after_kubelet_freeze) | Unknown after $(s e2e_node_unknown_after_kubelet_freeze) | $(s e2e_lead_kubelet_unresponsive_before_unknown) |
| hung-task line for containerd in /dev/kmsg | KernelDeadlock after $(s e2e_kernel_deadlock_on_node_after_kmsg_line) | (none) | |
| containerd stopped (SIGTERM), down 10 s, started | RuntimeUnreachable after $(s e2e_restart_graceful_stop_10s_down_unreachable_after_stop); False $(s e2e_restart_graceful_stop_10s_down_false_after_socket_answers) after its socket answered | | |
| containerd killed (SIGKILL), down 20 s, started | RuntimeUnreachable after $(s e2e_restart_sigkill_20s_down_unreachable_after_stop); False $(s e2e_restart_sigkill_20s_down_false_after_socket_answers) after its socket answered | | |
| containerd upgraded in place ($CONTAINERD_VERSION to $CONTAINERD_UPGRADE_VERSION) | RuntimeUnreachable after $(s e2e_restart_upgrade_in_place_unreachable_after_stop); False $(s e2e_restart_upgrade_in_place_false_after_socket_answers) after its socket answered | | |

Healthy run ($healthy, 100 pods, a pod created and one deleted every 3 s, half the cores
busy): $(grep -o 'healthy run: .*' "$log" | tail -1 | sed 's/^healthy run: //'); the kubelet's last relist was at most $(m e2e_healthy_max_pleg_last_seen_age_seconds) s old. hangwatch's footprint: RSS
(VmRSS) $(m e2e_footprint_rss_steady_mib) MiB at the end, peak $(m e2e_footprint_rss_peak_mib) MiB, of which its own
anonymous memory (RssAnon: heap, stacks) $(m e2e_footprint_rss_anon_steady_mib) MiB, peak $(m e2e_footprint_rss_anon_peak_mib) MiB, the rest
the pages of its binary it has touched; CPU $(m e2e_footprint_cpu_percent_of_a_core)% of a core;
CRI calls $(m e2e_cri_calls_per_min_hangwatch)/min against the kubelet's $(m e2e_cri_calls_per_min_kubelet)/min
(\`kubelet_runtime_operations_total\`): $(m e2e_cri_calls_hangwatch_share_percent)%.
<!-- e2e:end -->
TABLE
)
write_benchmarks_section e2e "## End to end: the static pod against the kubelet and the controller" "$table"
log "BENCHMARKS.md updated; the full log is $log"
[ "$rc" -eq 0 ] || log "some scenarios failed (go test exit $rc): see $log"
exit "$rc"

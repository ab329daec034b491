# shellcheck shell=bash
# hack/e2e.sh --alerts: the alert path (a real Prometheus and Alertmanager
# on two kubelet nodes, test/integration/alert_path_test.go), three runs
# (ALERT_RUNS), and its table in BENCHMARKS.md (alerts markers): medians
# from a freeze to each shipped alert at the receiver and from the thaw
# to its resolution.
run_alerts() {
  ensure_containerd
  ensure_prometheus
  ensure_alertmanager
  local log=$HANGWATCH_CACHE/e2e-alerts.log rc=0 runs=${ALERT_RUNS:-3}
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelets and control plane $KUBE_VERSION, Prometheus $PROMETHEUS_MODULE_VERSION (module), Alertmanager $ALERTMANAGER_VERSION"
  local run='TestShippedAlertsPageThroughAlertmanager$'
  local cmd="go test -count $runs -timeout 60m -v -run '$run' ./test/integration/"
  local measured; measured=$(measurements_file e2e-alerts)
  log "running: $cmd"
  HANGWATCH_MEASUREMENTS=$measured go test -count "$runs" -timeout 60m -v -run "$run" ./test/integration/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^(---|ok|FAIL)' || true; } || rc=$?
  publish_section alerts "## The alert path" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=$cmd"
}

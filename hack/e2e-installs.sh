# hack/e2e.sh --installs: hangwatch as shipped, from its image, as pods
# (issue 49), sourced by hack/e2e.sh.

# run_installs runs the installs suite INSTALLS_RUNS times (3): the shipped
# overlays (kubectl apply -k) and the chart (helm install) on real kubelets,
# a freeze the restart cures and the whole ladder to the fence, the ladder
# also with hangwatch as binaries for comparison; and writes the table
# between the installs markers.
run_installs() {
  ensure_containerd
  ensure_helm
  local log=$HANGWATCH_CACHE/e2e-installs.log rc=0 runs=${INSTALLS_RUNS:-3}
  local machine
  machine="$(machine_text), containerd $CONTAINERD_VERSION, kubelets and control plane $KUBE_VERSION, helm $HELM_MODULE_VERSION"
  local measured; measured=$(measurements_file e2e-installs)
  local cmd="HANGWATCH_SUITE=e2e go test -count $runs -timeout 90m -v -run 'TestInstalls' ./test/e2e/"
  log "running: $cmd"
  HANGWATCH_MEASUREMENTS=$measured HANGWATCH_SUITE=e2e go test -count "$runs" -timeout 90m -v -run 'TestInstalls' ./test/e2e/ 2>&1 \
    | tee "$log" | { grep -E 'MEASURE|^\s*(---|ok|FAIL)' || true; } || rc=$?
  publish_section installs "## As shipped: every install from its image, as pods, through the whole ladder" "$log" "$rc" "$measured" \
    -var "machine=$machine" -var "command=\`./hack/e2e.sh --installs\`, which runs \`$cmd\`"
}

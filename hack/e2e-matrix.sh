# Sourced by hack/e2e.sh --matrix: one short end-to-end run per
# kubelet/containerd pair of E2E_MATRIX, one row each in BENCHMARKS.md.

# matrix_row KUBELET CONTAINERD GATES HEALTHY runs the pair's scenarios
# into its log and prints its table row.
matrix_row() {
  local k=$1 c=$2 gates=$3 healthy=$4 rc=0
  ensure_kubelet "$k"
  CONTAINERD_VERSION=$c ensure_containerd
  local log="$HANGWATCH_CACHE/e2e-matrix-$k-$c${gates:+-${gates//[=,]/-}}.log"
  log "matrix: kubelet $k, containerd $c${gates:+, gates $gates}: log $log"
  HANGWATCH_KUBELET_BIN="$HANGWATCH_CACHE/kube-$k/kubelet" HANGWATCH_KUBELET_FEATURE_GATES="$gates" \
    HANGWATCH_E2E_LONG=1 HANGWATCH_E2E_HEALTHY=$healthy HANGWATCH_E2E_PODS=30 \
    go test -count 1 -timeout 40m -v -run 'TestStaticPodBeatsNotReady$|TestStaticPodListPodSandboxHang$|TestStaticPodHealthyNodeRaisesNothing$' \
    ./test/integration/ >"$log" 2>&1 || rc=$?
  m() { grep -o "MEASURE $1 [0-9.]*" "$log" | tail -1 | awk '{print $3}'; }
  s() { local v; v=$(m "$1"); [ -n "$v" ] && printf '%.1f s' "$v" || echo "-"; }
  local frozen lps healthy
  frozen="RuntimeHung $(s e2e_runtime_hung_on_node_after_freeze), Ready=False $(s e2e_kubelet_ready_false_after_freeze): **$(s e2e_lead_runtime_hung_before_not_ready)**"
  lps="PLEGUnhealthy $(s e2e_pleg_unhealthy_after_list_pod_sandbox_hang), "
  if [ -n "$(m e2e_pleg_path_unobservable)" ]; then
    lps="not observable outside the kubelet: the Evented PLEG before 1.37 fakes the relist gauge (skipped)"
  elif [ -n "$(m e2e_kubelet_ready_false_after_list_pod_sandbox_hang)" ]; then
    lps+="Ready=False $(s e2e_kubelet_ready_false_after_list_pod_sandbox_hang): **$(s e2e_lead_pleg_unhealthy_before_not_ready_list_pod_sandbox)**"
  else
    lps+="kubelet stayed Ready"
  fi
  if grep -q -- '--- PASS: TestStaticPodHealthyNodeRaisesNothing' "$log"; then
    healthy="none ($(grep -o 'healthy run: [0-9]* steady pods, [0-9]* churn pods created' "$log" | tail -1 | sed 's/healthy run: //'))"
  else
    healthy="FAILED: $(grep -m1 -o 'a healthy node got .*' "$log" | cut -c1-160)"
  fi
  local fails; fails=$(grep -o -- '--- FAIL: [A-Za-z/_]*' "$log" | sed 's/--- FAIL: //' | tr '\n' ' ')
  echo "| $k | $c | ${gates:--} | $frozen | $lps | $healthy | ${fails:-all passed} |"
  return 0
}

# run_matrix HEALTHY runs every row, writing the table after each one, so
# an interrupted matrix still leaves the rows it finished. Rows of pairs
# not run this time are kept as they were (E2E_MATRIX may name a few).
run_matrix() {
  local healthy=$1 rows k c gates
  rows=$(sed -n '/<!-- e2e-matrix:begin/,/<!-- e2e-matrix:end/p' BENCHMARKS.md | grep '^| v1' || true)
  [ -z "$rows" ] || rows+=$'\n'
  while read -r k c gates; do
    [ -n "$k" ] || continue
    rows=$(put_row "$rows" "$(matrix_row "$k" "$c" "$gates" "$healthy")")
    write_matrix "$healthy" "$rows"
  done <<<"$E2E_MATRIX"
}

# put_row ROWS ROW prints ROWS with ROW in place of the row of the same
# kubelet, containerd and gates, or after them.
put_row() {
  local rows=$1 row=$2 key line out="" put=""
  key=$(cut -d'|' -f2-4 <<<"$row")
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    if [ "$(cut -d'|' -f2-4 <<<"$line")" = "$key" ]; then out+="$row"$'\n'; put=1; else out+="$line"$'\n'; fi
  done <<<"$rows"
  [ -n "$put" ] || out+="$row"$'\n'
  printf '%s' "$out"
}

# write_matrix HEALTHY ROWS puts the table between the matrix markers of
# BENCHMARKS.md.
write_matrix() {
  local healthy=$1 rows=$2 table
  table=$(cat <<TABLE
<!-- e2e-matrix:begin (written by hack/e2e.sh --matrix) -->
Machine: $(machine_text); control plane $KUBE_VERSION. Command: \`./hack/e2e.sh --matrix $healthy\` (last run $(date -u +%Y-%m-%d)); each row's log is \`\$HANGWATCH_CACHE/e2e-matrix-<kubelet>-<containerd>[-<gates>].log\`.

| kubelet | containerd | kubelet feature gates | containerd frozen: hangwatch, kubelet, **lead** | ListPodSandbox hangs: hangwatch, kubelet, **lead** | conditions raised in the healthy run ($healthy, 30 pods) | tests |
| --- | --- | --- | --- | --- | --- | --- |
${rows%$'\n'}
<!-- e2e-matrix:end -->
TABLE
)
  write_benchmarks_section e2e-matrix "## End to end on each supported kubelet and containerd" "$table"
  log "BENCHMARKS.md: $(grep -c '^| v1' <<<"$rows") matrix rows written"
}

# Sourced by hack/e2e.sh --matrix: one short end-to-end run per
# kubelet/runtime pair of E2E_MATRIX (containerd or CRI-O), one row each in
# BENCHMARKS.md.

# matrix_row KUBELET RUNTIME GATES HEALTHY runs the pair's scenarios
# into its log and prints its table row. RUNTIME is a containerd version
# (v2.3.7) or crio-<version> (crio-v1.36.3, the pinned CRI-O: the one the
# module proxy serves).
matrix_row() {
  local k=$1 c=$2 gates=$3 healthy=$4 rc=0 runtime=containerd shown=$2
  ensure_kubelet "$k"
  if [[ "$c" == crio-* ]]; then
    [ "${c#crio-}" = "$CRIO_VERSION" ] || { echo "matrix: CRI-O ${c#crio-} is not the pinned $CRIO_VERSION" >&2; return 1; }
    ensure_crio
    runtime=crio shown="CRI-O ${c#crio-}"
  else
    CONTAINERD_VERSION=$c ensure_containerd
  fi
  local log="$HANGWATCH_CACHE/e2e-matrix-$k-$c${gates:+-${gates//[=,]/-}}.log"
  log "matrix: kubelet $k, $shown${gates:+, gates $gates}: log $log"
  local measured; measured=$(measurements_file "e2e-matrix-$k-$c${gates:+-${gates//[=,]/-}}")
  HANGWATCH_E2E_RUNTIME=$runtime HANGWATCH_KUBELET_BIN="$HANGWATCH_CACHE/kube-$k/kubelet" HANGWATCH_KUBELET_FEATURE_GATES="$gates" \
    HANGWATCH_E2E_HEALTHY=$healthy HANGWATCH_E2E_PODS=30 HANGWATCH_MEASUREMENTS=$measured \
    go test -tags e2e -count 1 -timeout 40m -v -run 'TestStaticPodBeatsNotReady$|TestStaticPodListPodSandboxHang$|TestStaticPodHealthyNodeRaisesNothing$' \
    ./test/integration/ >"$log" 2>&1 || rc=$?
  # what is not a measurement: whether the healthy run passed, the tests that failed
  local healthy_failure="" fails row
  if ! grep -q -- '--- PASS: TestStaticPodHealthyNodeRaisesNothing' "$log"; then
    healthy_failure=$(grep -m1 -o 'a healthy node got .*' "$log" | cut -c1-160 || true)
    healthy_failure=${healthy_failure:-see the log}
  fi
  fails=$(grep -o -- '--- FAIL: [A-Za-z/_]*' "$log" | sed 's/--- FAIL: //' | tr '\n' ' ' || true)
  local vars=(-var "kubelet=$k" -var "containerd=$shown" -var "gates=$gates" -var "healthy_failure=$healthy_failure" -var "fails=$fails")
  # a pair whose scenarios did not all measure still gets its row: the
  # figures' cells name what was not measured
  if ! row=$(benchtable -measurements "$measured" -section e2e-matrix-row "${vars[@]}" 2>&1); then
    row="| $k | $shown | ${gates:--} | ${row//|//} | | | ${fails:-all passed} |"
  fi
  echo "$row"
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
Machine: $(machine_text); control plane $KUBE_VERSION. Command: \`./hack/e2e.sh --matrix $healthy\` (last run $(date -u +%Y-%m-%d)); each row's log is \`\$HANGWATCH_CACHE/e2e-matrix-<kubelet>-<runtime>[-<gates>].log\`; a runtime with no name is containerd.

| kubelet | runtime | kubelet feature gates | runtime frozen: hangwatch, kubelet, **lead** | ListPodSandbox hangs: hangwatch, kubelet, **lead** | conditions raised in the healthy run ($healthy, 30 pods) | tests |
| --- | --- | --- | --- | --- | --- | --- |
${rows%$'\n'}
<!-- e2e-matrix:end -->
TABLE
)
  write_benchmarks_section e2e-matrix "## End to end on each supported kubelet and runtime" "$table"
  log "BENCHMARKS.md: $(grep -c '^| v1' <<<"$rows") matrix rows written"
}

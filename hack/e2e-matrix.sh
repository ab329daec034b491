# Sourced by hack/e2e.sh --matrix: one short end-to-end run per
# kubelet/runtime pair of E2E_MATRIX (containerd or CRI-O), one row each in
# BENCHMARKS.md: each pair's measurements are recorded as its row of
# hack/benchtable/records/e2e-matrix.jsonl, and the page rendered again.

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
    HANGWATCH_SUITE=e2e go test -p 1 -count 1 -timeout 40m -v -run 'TestStaticPodBeatsNotReady$|TestStaticPodListPodSandboxHang$|TestStaticPodHealthyNodeRaisesNothing$' \
    ./test/integration/ ./test/e2e/ >"$log" 2>&1 || rc=$?
  # what is not a measurement: whether the healthy run passed, the tests that failed
  local healthy_failure="" fails row
  if ! grep -q -- '--- PASS: TestStaticPodHealthyNodeRaisesNothing' "$log"; then
    healthy_failure=$(grep -m1 -o 'a healthy node got .*' "$log" | cut -c1-160 || true)
    healthy_failure=${healthy_failure:-see the log}
  fi
  fails=$(grep -o -- '--- FAIL: [A-Za-z/_]*' "$log" | sed 's/--- FAIL: //' | tr '\n' ' ' || true)
  local vars=(-var "kubelet=$k" -var "containerd=$shown" -var "gates=$gates" -var "healthy_failure=$healthy_failure" -var "fails=$fails"
    -var "machine=$(machine_text)" -var "control_plane=$KUBE_VERSION" -var "healthy=$healthy"
    -var "command=E2E_MATRIX=\"$k $c${gates:+ $gates}\" ./hack/e2e.sh --matrix $healthy")
  # the row is recorded even when its scenarios did not all measure: the
  # table's figures cell then names what was not measured
  if ! row=$(benchtable -measurements "$measured" -section e2e-matrix-row -save -row "$k $shown ${gates:--}" "${vars[@]}" 2>&1); then
    row="| $k | $shown | ${gates:--} | ${row//|//} | | | ${fails:-all passed} |"
  fi
  echo "$row"
  return 0
}

# run_matrix HEALTHY runs every row, rendering BENCHMARKS.md after each
# one, so an interrupted matrix still leaves the rows it finished. Rows of
# pairs not run this time keep their records (E2E_MATRIX may name a few).
run_matrix() {
  local healthy=$1 k c gates n=0
  while read -r k c gates; do
    [ -n "$k" ] || continue
    matrix_row "$k" "$c" "$gates" "$healthy"
    benchtable -w
    n=$((n + 1))
    log "BENCHMARKS.md: matrix row $n recorded (hack/benchtable/records/e2e-matrix.jsonl)"
  done <<<"$E2E_MATRIX"
}

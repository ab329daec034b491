#!/usr/bin/env bash
# Run the benchmarks against a real containerd, print the figures that
# BENCHMARKS.md records, and record them (needs root): Go's benchmarks go
# to hack/benchtable/records/go-bench.jsonl (benchtable -gobench), the
# footprint to records/footprint.jsonl, and BENCHMARKS.md is rendered again.
#   ./hack/bench.sh
#   ./hack/bench.sh --hang-after-slowness   # only issue 31's holds and the CRI share
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/bench.sh starts containerd"
run_scope bench   # sweeps what the tests leave when interrupted (lib.sh)
export HANGWATCH_TEST_PARALLEL=1   # what runs here measures: the integration tests one at a time (docs/testing.md)
ensure_packages
ensure_go
ensure_containerd
ensure_kube_binaries
# --hang-after-slowness runs only the CRI holds after a minute of slowness
# and from a healthy start (3 each), and the healthy 100-pod run for the
# CRI share, and writes their BENCHMARKS.md section (issue 31).
if [ "${1:-}" = "--hang-after-slowness" ]; then
  export HANGWATCH_MEASUREMENTS
  HANGWATCH_MEASUREMENTS=$(measurements_file hang-after-slowness)
  log_file="$HANGWATCH_CACHE/bench-hang-after-slowness.log"
  cmd="HANGWATCH_SUITE=bench go test -timeout 30m -v -run TestHangAfterSlownessMeasured ./test/bench/; HANGWATCH_E2E_HEALTHY=5m HANGWATCH_SUITE=e2e go test -timeout 30m -v -run TestStaticPodHealthyNodeRaisesNothing ./test/e2e/"
  rc=0
  { HANGWATCH_SUITE=bench go test -timeout 30m -v -run TestHangAfterSlownessMeasured ./test/bench/ &&
    HANGWATCH_E2E_HEALTHY=5m HANGWATCH_SUITE=e2e go test -timeout 30m -v -run TestStaticPodHealthyNodeRaisesNothing ./test/e2e/; } \
    > "$log_file" 2>&1 || rc=$?
  grep -E 'MEASURE|^(---|ok|FAIL)' "$log_file" || true
  publish_section hang-after-slowness "## A hang after a spell of slowness" "$log_file" "$rc" "$HANGWATCH_MEASUREMENTS" \
    -var "machine=$(machine_text), containerd $CONTAINERD_VERSION" -var "command=$cmd"
  exit $?
fi
ensure_npd
echo "machine: $(machine_text), containerd $CONTAINERD_VERSION, Kubernetes $KUBE_VERSION"
echo

# Every test below records its measurements into one file
# (test/measurements); the footprint table is rendered from them, and
# their summary ends the output.
export HANGWATCH_MEASUREMENTS
HANGWATCH_MEASUREMENTS=$(measurements_file bench)
# go_bench COMMAND...: runs a `go test -bench` command, prints its output
# and records its results (hack/benchtable -gobench) with the command and
# this machine.
go_bench() {
  local out="$HANGWATCH_CACHE/bench-go.txt" cmd
  cmd=$(printf '%q ' "$@")
  echo "\$ ${cmd% }"
  "$@" | tee "$out"
  benchtable -gobench "$out" -var "machine=$(machine_text), containerd $CONTAINERD_VERSION" -var "command=${cmd% }"
}
go_bench go test -run '^$' -bench BenchmarkProbeCycle -benchtime 200x -count 3 ./cri/
echo
go_bench go test -run '^$' -bench 'BenchmarkMonitor|BenchmarkNPDWay' -benchtime 1000000x -count 3 ./kernellog/
echo
echo "\$ go test -count 3 -v -run 'TestDiag|TestRun|TestKernel' ./test/integration/ | grep MEASURE"
go test -count 3 -v -run 'TestDiag|TestRun|TestKernel' ./test/integration/ | grep MEASURE | sed 's/^ *//'
echo
echo "\$ HANGWATCH_SUITE=bench go test -count 3 -v -run TestKmsgFloodFootprint ./test/bench/ | grep MEASURE"
HANGWATCH_SUITE=bench go test -count 3 -v -run TestKmsgFloodFootprint ./test/bench/ | grep MEASURE | sed 's/^ *//'
echo
echo "\$ HANGWATCH_NPD_BIN=$HANGWATCH_NPD_BIN HANGWATCH_SUITE=bench go test -count 1 -v -timeout 20m -run TestFootprintBesideNPD ./test/bench/ | grep -E 'MEASURE|^ *\\|'"
HANGWATCH_SUITE=bench go test -count 1 -v -timeout 20m -run TestFootprintBesideNPD ./test/bench/ | tee "$HANGWATCH_CACHE/bench-footprint.log" | grep -E 'MEASURE|^ *\|' | sed 's/^ *//'
echo
echo "\$ HANGWATCH_E2E_HEALTHY=5m HANGWATCH_SUITE=e2e go test -count 1 -v -timeout 30m -run TestStaticPodHealthyNodeRaisesNothing ./test/e2e/ | grep -E 'MEASURE e2e_(footprint|cri)'"
HANGWATCH_E2E_HEALTHY=5m HANGWATCH_SUITE=e2e go test -count 1 -v -timeout 30m -run TestStaticPodHealthyNodeRaisesNothing ./test/e2e/ | tee "$HANGWATCH_CACHE/bench-healthy.log" | grep -E 'MEASURE e2e_(footprint|cri)' | sed 's/^ *//'
./hack/footprint-table.sh "$HANGWATCH_MEASUREMENTS" "$(machine_text), containerd $CONTAINERD_VERSION, Kubernetes $KUBE_VERSION"
echo
echo "\$ go test -count 3 -v -run 'TestFrozenRuntimeReachesTheNode|TestAPIServerRestart|TestLeaseNotRenewed' ./test/integration/ | grep MEASURE"
go test -count 3 -v -run 'TestFrozenRuntimeReachesTheNode|TestAPIServerRestart|TestLeaseNotRenewed' ./test/integration/ | grep MEASURE | sed 's/^ *//'
echo
echo "\$ HANGWATCH_SUITE=bench go test -count 1 -v -run TestWriteBudget ./test/bench/ | grep MEASURE"
HANGWATCH_SUITE=bench go test -count 1 -v -run TestWriteBudget ./test/bench/ | grep MEASURE | sed 's/^ *//'

go_bench go test -run '^$' -bench 'BenchmarkParse|BenchmarkWindow|BenchmarkParseAtTheBounds' -benchtime 200x -count 3 ./kubeletmetrics/
go_bench go test -run '^$' -bench PassAtRest -benchtime 30x -count 3 ./remedy/

echo "\$ go test -run '^\$' -fuzz FuzzParse -fuzztime 2m ./kubeletmetrics/"
go test -run '^$' -fuzz FuzzParse -fuzztime 2m ./kubeletmetrics/ 2>&1 | tail -3

echo "\$ go test -count 3 -v -run TestFrozenRuntimeRaisesPLEGUnhealthyWhileKubeletReady ./test/integration/ | grep -E 'MEASURE|Ready='"
go test -count 3 -v -run TestFrozenRuntimeRaisesPLEGUnhealthyWhileKubeletReady ./test/integration/ | grep -E 'MEASURE|Ready=' | sed 's/^ *//'

echo "\$ HANGWATCH_SUITE=bench go test -timeout 20m -v -run TestHealthyNodeWithPodChurnStaysPLEGHealthy ./test/bench/ | grep churn"
HANGWATCH_SUITE=bench go test -timeout 20m -v -run TestHealthyNodeWithPodChurnStaysPLEGHealthy ./test/bench/ | grep churn | sed 's/^ *//'

echo
echo "every measurement recorded (median of the runs), from $HANGWATCH_MEASUREMENTS:"
benchtable -measurements "$HANGWATCH_MEASUREMENTS" -summary
benchtable -w
echo "BENCHMARKS.md rendered from hack/benchtable/records"

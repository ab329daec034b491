#!/usr/bin/env bash
# hangwatch-remedy against one real kube-apiserver holding thousands of
# Nodes the size of real ones (40 images each), 1% of them with RuntimeHung
# True: time to the first taint and to the last, the reaction to one more
# sick node on a warm cache, the controller's memory and CPU, and its
# requests a second while nothing changes. Writes the figures into
# BENCHMARKS.md (between the remedy-scale markers).
#   ./hack/bench-remedy-scale.sh [NODES (default 5000)]
# Needs root (the integration tests' control plane). About 10 minutes for 5000.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/bench-remedy-scale.sh starts etcd and kube-apiserver"
run_scope bench   # sweeps what the test leaves when interrupted (lib.sh)
nodes=${1:-5000}
case "$nodes" in '' | *[!0-9]*) echo "NODES must be a number, not $nodes" >&2; exit 2 ;; esac
ensure_packages
ensure_go
ensure_kube_binaries

log=$HANGWATCH_CACHE/bench-remedy-scale.log
version=$(hangwatch_version)   # before the run: the test builds hangwatch-remedy from the tree as it is then
machine="$(machine_text), control plane $KUBE_VERSION (etcd $(etcd --version 2>/dev/null | awk '/etcd Version/{print $3}'))"
# the controller runs with the Go memory limit its Deployment sets
# (manifests/overlays/remedy/deployment.yaml); it inherits the test's environment
gomemlimit=$(awk '/name: GOMEMLIMIT/{getline; print $2}' manifests/overlays/remedy/deployment.yaml)
export GOMEMLIMIT=$gomemlimit
cmd="GOMEMLIMIT=$gomemlimit HANGWATCH_REMEDY_SCALE=$nodes HANGWATCH_SUITE=bench go test -count 1 -timeout 60m -v -run TestRemedyScaleBenchmark ./test/bench/"
measured=$(measurements_file bench-remedy-scale)
log "running: $cmd"
rc=0
HANGWATCH_MEASUREMENTS=$measured HANGWATCH_REMEDY_SCALE=$nodes HANGWATCH_SUITE=bench go test -count 1 -timeout 60m -v -run TestRemedyScaleBenchmark ./test/bench/ 2>&1 \
  | tee "$log" | { grep -E 'MEASURE|rest_client|^(---|ok|FAIL)' || true; } || rc=$?
if ! grep -q -- '--- PASS: TestRemedyScaleBenchmark' "$log"; then
  log "the benchmark did not pass (log: $log); BENCHMARKS.md left as it was"
  exit $(( rc == 0 ? 1 : rc ))
fi
sick=$(( (nodes + 99) / 100 ))   # nodes 0, 100, 200...
publish_section remedy-scale "## hangwatch-remedy at scale: thousands of Nodes on one kube-apiserver" "$log" "$rc" "$measured" \
  -var "machine=$machine" -var "version=$version" -var "nodes=$nodes" -var "sick=$sick" -var "command=$cmd" -var "gomemlimit=$gomemlimit"

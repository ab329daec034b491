#!/usr/bin/env bash
# Records the footprint section (hack/benchtable/records/footprint.jsonl)
# from the measurements TestFootprintBesideNPD and the healthy 100-pod
# static-pod run recorded (hack/bench.sh runs both and calls this), and
# renders BENCHMARKS.md again with hack/benchtable.
#   ./hack/footprint-table.sh MEASUREMENTS MACHINE
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
measured=$1 machine=$2
benchtable -measurements "$measured" -section footprint -save -w -var "machine=$machine" \
  -var "code=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" -var "npd=$NPD_VERSION built by ensure_npd" \
  -var "healthy_run=in the same hack/bench.sh run, at the same code" \
  -var "command=./hack/bench.sh (TestFootprintBesideNPD, TestStaticPodHealthyNodeRaisesNothing)" >/dev/null
echo "footprint table recorded and BENCHMARKS.md rendered"

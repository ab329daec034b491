#!/usr/bin/env bash
# Writes the footprint table into BENCHMARKS.md, between
# <!-- footprint:begin --> and <!-- footprint:end -->, from the measurements
# TestFootprintBesideNPD and the healthy 100-pod static-pod run recorded
# (hack/bench.sh runs both and calls this); hack/benchtable renders it.
#   ./hack/footprint-table.sh MEASUREMENTS MACHINE
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
measured=$1 machine=$2
block=$(benchtable -measurements "$measured" -section footprint -var "machine=$machine" \
  -var "code=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
write_benchmarks_section footprint "### Footprint beside node-problem-detector, as hack/bench.sh last measured it" "$block"
echo "footprint table written to BENCHMARKS.md"

#!/usr/bin/env bash
# The bytes of code and data each package group puts in hangwatch's binary,
# from `go tool nm -size` (BSS left out: it takes no room in the file).
#   ./hack/size-by-package.sh [BINARY]   (default: a fresh unstripped build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d)/hangwatch
  trap 'rm -rf "$(dirname "$bin")"' EXIT
  CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -o "$bin" ./cmd/hangwatch
fi
bss=$(readelf -S -W "$bin" | awk '$2==".bss"{print $4}')
echo "binary: $(stat -c %s "$bin") bytes unstripped; k8s.io/api groups linked: $(go list -deps ./cmd/hangwatch | grep -c '^k8s.io/api/')"
go tool nm -size "$bin" | awk -v bss=$((16#$bss)) -f hack/size-by-package.awk | sort -rn | head -"${TOP:-20}"

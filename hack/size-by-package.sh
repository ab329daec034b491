#!/usr/bin/env bash
# The bytes of code and data each package group puts in hangwatch's binary,
# from `go tool nm -size` (BSS left out: it takes no room in the file).
#   ./hack/size-by-package.sh [BINARY]   (default: a fresh unstripped build)
source "$(dirname "$0")/lib.sh"   # BUILD_TAGS
cd "$ROOT"
bin=${1:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d)/hangwatch
  trap 'rm -rf "$(dirname "$bin")"' EXIT
  CGO_ENABLED=0 go build -tags "$BUILD_TAGS" -trimpath -o "$bin" ./cmd/hangwatch
fi
bss=$(readelf -S -W "$bin" | awk '$2==".bss"{print $4}')
echo "binary: $(stat -c %s "$bin") bytes unstripped; k8s.io/api groups linked: $(go list -deps ./cmd/hangwatch | grep -c '^k8s.io/api/')"
go tool nm -size "$bin" | awk -v bss=$((16#$bss)) -f hack/size-by-package.awk | sort -rn | head -"${TOP:-20}"

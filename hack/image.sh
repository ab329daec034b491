#!/usr/bin/env bash
# Build hangwatch's container image without a Docker daemon: a
# multi-platform OCI image index (linux/amd64 and linux/arm64, cross-built
# with pure Go), each the static hangwatch (the entrypoint) and
# hangwatch-remedy (/hangwatch-remedy, the remedy Deployment's command) in
# a one-layer image
# (go-containerregistry), written as an OCI layout tarball that
# `ctr images import` accepts (it unpacks this machine's platform).
#   ./hack/image.sh [--ref NAME:TAG] [--out FILE] [--import]
#   --import also imports it into the node's containerd (k8s.io namespace).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
ref="" out="$ROOT/_output/hangwatch-image.tar" import=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) ref=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --import) import=1; shift ;;
    *) echo "usage: $0 [--ref NAME:TAG] [--out FILE] [--import]" >&2; exit 2 ;;
  esac
done
ensure_go
args=()
for arch in amd64 arm64; do
  build_hangwatch "$arch" "bin/linux-$arch/hangwatch"
  build_hangwatch "$arch" "bin/linux-$arch/hangwatch-remedy" ./cmd/hangwatch-remedy
  args+=(-binary "$arch=bin/linux-$arch/hangwatch" -remedy "$arch=bin/linux-$arch/hangwatch-remedy")
done
version=$(hangwatch_version)
ref=${ref:-hangwatch.local/hangwatch:$version}
go run ./hack/image "${args[@]}" -ref "$ref" -o "$out" \
  -version "$version" -revision "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)" >/dev/null
log "wrote $ref to $out"
if [ -n "$import" ]; then
  as_root ctr -n k8s.io images import "$out"
fi
echo "$ref"

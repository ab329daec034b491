#!/usr/bin/env bash
# Set up and run hangwatch's main job.
#   sudo ./hack/run.sh            a machine without Kubernetes: brings up a real
#                                 containerd with a few pods and runs
#                                 `hangwatch run` against it, standalone
#   sudo ./hack/run.sh --node     a real node: runs `hangwatch run` against the
#                                 node's runtime (extra arguments go to it)
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/run.sh starts containerd and reads its socket"
if [ "${1:-}" = "--node" ]; then
  shift
  APT_PACKAGES=(ca-certificates curl unzip git)
  ensure_packages; ensure_go; build_hangwatch
  exec bin/hangwatch run "$@"
fi
ensure_packages
ensure_go
build_hangwatch
exec go run ./test/demo "$@"

#!/usr/bin/env bash
# Set up and run hangwatch's main job.
#   ./hack/run.sh            a machine without Kubernetes: brings up a real
#                            containerd with a few pods and runs `hangwatch run`
#                            against it, standalone
#   ./hack/run.sh --node     a real node: runs `hangwatch run` against the
#                            node's runtime (extra arguments go to it)
# It needs root: as another user it re-runs itself through sudo.
# Ctrl-C (or SIGTERM, SIGHUP) stops the demo, which removes its pods and
# stops containerd; whatever it could not clean up (killed, or its output
# gone) is swept after it: processes, mounts and the run's temp dir
# (run_scope in hack/lib.sh), also when its output is piped
# (./hack/run.sh | tee demo.log) and the same Ctrl-C ends tee.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/run.sh starts containerd and reads its socket"
if [ "${1:-}" = "--node" ]; then
  shift
  APT_PACKAGES=(ca-certificates curl unzip git)
  ensure_packages; ensure_go; build_hangwatch
  exec bin/hangwatch run "$@"
fi
run_scope run
ensure_packages
ensure_go
ensure_containerd
build_hangwatch
# A built binary, not go run, so the PID it prints takes SIGINT and SIGTERM.
go build -o bin/hangwatch-demo ./test/demo
run_child bin/hangwatch-demo "$@"

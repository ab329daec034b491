#!/usr/bin/env bash
# Set up and run every test: formatting, vet, lint, unit tests and the
# integration tests against a real containerd, etcd, kube-apiserver and
# kubelet. They need root: run it as root, or as a user with sudo (it
# re-runs itself through sudo).
#   ./hack/test.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
need_root "hack/test.sh starts containerd, a kubelet and writes to /dev/kmsg"
SUMMARY="$HANGWATCH_CACHE/test-summary.txt"
rm -f "$SUMMARY"
# The tests' temp files go to a folder of this run's own (run_scope in
# lib.sh, $TMPDIR while they run), swept at the end whatever happened: a
# Ctrl-C, SIGTERM or SIGHUP, the output piped to a tee that is gone. What
# the tests left there is named, processes (containerd's shims, pods)
# killed, mounts unmounted; what appears in the system temp dir besides
# it is reported, so a test that litters is seen.
SYSTEM_TMP=${TMPDIR:-/tmp}
TMP_BEFORE=$(ls -A "$SYSTEM_TMP")

# finish runs after the sweep: it says what was left in the system temp
# dir, prints the time of each step, then the tests' closing line last.
finish() {
  local left
  restore_inotify_instances
  left=$(comm -13 <(echo "$TMP_BEFORE" | sort) <(ls -A "$SYSTEM_TMP" | sort) | tr '\n' ' ')
  [ -z "$left" ] || log "new in $SYSTEM_TMP since the start (not removed): $left"
  step_times
  [ -f "$SUMMARY" ] && cat "$SUMMARY"
  return 0
}
run_scope test finish
raise_inotify_instances 1024
log "expected on 2 cores: about 30-40 min from an empty cache (containerd, CRI-O, the Kubernetes binaries, the CSI sidecars, the NodeHealthCheck controller, Prometheus, Alertmanager, helm and golangci-lint are built once), about 10-15 min after"
APT_PACKAGES+=(qemu-user)   # runs the arm64 image's binary (TestImageRunsAsAContainer)
step "Debian packages" ensure_packages
step "Go toolchain" ensure_go
# The parts build in a lane beside the lint and the tests' compiling
# (beside in lib.sh): each go build already uses both cores while it
# compiles, and the other stream fills its links and downloads. Each step
# below then finds its part cached and exports where it is.
mkdir -p "$HANGWATCH_CACHE"
log "building the parts beside the lint, log in $HANGWATCH_CACHE/parts.log"
beside "$HANGWATCH_CACHE/parts.log" "Kubernetes binaries" ensure_kube_binaries \
  "containerd" ensure_containerd "containerd (upgrade)" ensure_upgrade_containerd "CRI-O" ensure_crio \
  "CSI sidecars" ensure_csi "Prometheus and promtool" ensure_prometheus "NodeHealthCheck controller" ensure_nhc \
  "Alertmanager" ensure_alertmanager "helm" ensure_helm
step "golangci-lint" ensure_golangci_lint

lint() {
  local unformatted
  log "gofmt"
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  [ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; return 1; }
  log "go vet"
  go vet ./...
  log "golangci-lint"
  "$GOLANGCI_LINT" run ./...
}
step "gofmt, go vet, lint" lint
step "go build" build_hangwatch

# test_packages: every package but the e2e and bench suites (docs/testing.md).
test_packages() { go list ./... | grep -v -e /test/e2e -e /test/bench; }

# compile_tests compiles the test packages as go test -race will, without
# linking or running them (go list -export compiles each into the build
# cache), while the parts build beside: on a cold machine the tests then
# start on binaries' links alone, not beside minutes of compiling.
compile_tests() {
  log "compiling the tests (go test -race's packages, into the build cache)"
  go list -race -test -deps -export $(test_packages) > /dev/null
}
step "compile the tests" compile_tests

parts() {
  wait_beside
  ensure_containerd; ensure_upgrade_containerd; ensure_crio; ensure_kube_binaries; ensure_csi
  ensure_nhc; ensure_prometheus; ensure_alertmanager; ensure_helm
}
step "the parts (built beside)" parts

# run_tests runs go test -json and summarises it: the usual go test output,
# then each skipped test with its reason and one closing line.
run_tests() {
  log "go test -race (unit and real-part integration tests; log in $HANGWATCH_CACHE/test.json)"
  go build -o "$HANGWATCH_CACHE/bin/testsummary" ./hack/testsummary
  # the integration tests run side by side, harness.Parallel limiting how
  # many at once, so -parallel lets all of them wait for their turn
  go test -race -count=1 -timeout 50m -parallel 128 -json $(test_packages) 2>&1 \
    | tee "$HANGWATCH_CACHE/test.json" | "$HANGWATCH_CACHE/bin/testsummary" "$SUMMARY"
}
step "go test" run_tests

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
log "expected on 2 cores: 40-60 min from an empty cache (containerd, CRI-O, the Kubernetes binaries, the CSI sidecars, the NodeHealthCheck controller, Prometheus, Alertmanager, helm and golangci-lint are built once), about 12-15 min after (the README's table has the measurements)"
APT_PACKAGES+=(qemu-user)   # runs the arm64 image's binary (TestImageRunsAsAContainer)
step "Debian packages" ensure_packages
step "Go toolchain" ensure_go
step "golangci-lint" ensure_golangci_lint
step "containerd" ensure_containerd
step "containerd (upgrade)" ensure_upgrade_containerd
step "CRI-O" ensure_crio
step "Kubernetes binaries" ensure_kube_binaries
step "CSI sidecars" ensure_csi
step "NodeHealthCheck controller" ensure_nhc
step "Prometheus and promtool" ensure_prometheus
step "Alertmanager" ensure_alertmanager
step "helm" ensure_helm

# TEST_FLAGS: one compile of the module and its dependencies, race-built
# and without DWARF, serves go vet, golangci-lint (it compiles what it loads
# through go list, so it takes them through GOFLAGS) and go test. From an
# empty Go cache on 2 cores the three compiled in 438 s with one compile
# against 644 s with vet's and golangci-lint's own, not race-built.
TEST_FLAGS=(-race "-gcflags=$BUILD_GCFLAGS")
lint() {
  local unformatted
  log "gofmt"
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  [ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; return 1; }
  log "go vet"
  go vet "${TEST_FLAGS[@]}" ./...
  log "golangci-lint"
  GOFLAGS="$(go env GOFLAGS) ${TEST_FLAGS[*]}" "$GOLANGCI_LINT" run ./...
}
step "gofmt, go vet, lint" lint
step "go build" build_hangwatch

# compile_for_tests compiles, without linking, what the tests build beyond
# bin/hangwatch: hack/image.sh's hangwatch-remedy, both binaries for arm64
# and its image tool. From an empty cache those compiles then run here and
# not beside the timed integration tests, on the same cores; warm, it
# finds them cached in seconds.
compile_for_tests() {
  local arch
  for arch in amd64 arm64; do
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch go list -export -deps -tags "$BUILD_TAGS" -trimpath -gcflags "$BUILD_GCFLAGS" \
      ./cmd/hangwatch ./cmd/hangwatch-remedy >/dev/null
  done
  go list -export -deps ./hack/image >/dev/null
}
step "compile what the tests build" compile_for_tests

# run_tests runs go test -json and summarises it: the usual go test output,
# then each skipped test with its reason and one closing line.
run_tests() {
  log "go test -race (unit and real-part integration tests; log in $HANGWATCH_CACHE/test.json)"
  go build -o "$HANGWATCH_CACHE/bin/testsummary" ./hack/testsummary
  # every package but the e2e and bench suites (docs/testing.md); the
  # integration tests run side by side, harness.Parallel limiting how many
  # at once, so -parallel lets all of them wait for their turn
  go test "${TEST_FLAGS[@]}" -count=1 -timeout 50m -parallel 128 -json $(go list ./... | grep -v -e /test/e2e -e /test/bench) 2>&1 \
    | tee "$HANGWATCH_CACHE/test.json" | "$HANGWATCH_CACHE/bin/testsummary" "$SUMMARY"
}
step "go test" run_tests

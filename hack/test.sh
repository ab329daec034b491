#!/usr/bin/env bash
# Set up and run every test: formatting, vet, lint, unit tests and the
# integration tests against a real containerd (they need root).
#   sudo ./hack/test.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
ensure_packages
ensure_go
ensure_golangci_lint
ensure_kube_binaries
ensure_promtool
ensure_helm

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }
log "go vet"
go vet ./...
log "golangci-lint"
"$GOLANGCI_LINT" run ./...
log "go build"
build_hangwatch
[ "$(id -u)" -eq 0 ] || log "not root: the real-containerd tests will be skipped (run with sudo)"
log "go test -race (unit and real-containerd integration tests)"
go test -race -count=1 -timeout 20m ./... 2>&1 | tee "$HANGWATCH_CACHE/test.log"

# Shared by hack/*.sh: install what hangwatch needs on a Debian/Ubuntu machine.
# Everything fetched goes to the Debian archive or the Go module proxy; Go
# tools and toolchains are cached under $HANGWATCH_CACHE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_ARGS=("$@")                         # the sourcing script's arguments, for need_root
HANGWATCH_CACHE=${HANGWATCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangwatch}
GO_VERSION=${GO_VERSION:-$(awk '/^toolchain go/{sub(/^go/, "", $2); print $2}' "$ROOT/go.mod")}  # fetched when the machine's Go is older
# pin KEY: a version from internal/pins/pins.env, the one place that names
# each (test/harness reads the same file through package pins).
pin() {
  local v
  v=$(awk -F= -v k="$1" '$0 !~ /^[[:space:]]*#/ && $1 == k { sub(/^[^=]*=/, ""); print; exit }' "$ROOT/internal/pins/pins.env")
  [ -n "$v" ] || { echo "internal/pins/pins.env sets no $1" >&2; return 1; }
  echo "$v"
}
GOLANGCI_LINT_VERSION=$(pin GOLANGCI_LINT_VERSION)
KUBE_VERSION=${KUBE_VERSION:-$(pin KUBE_VERSION)}  # a folder under hack/kube pins its modules; test/harness reads $HANGWATCH_KUBE_BIN
KUBE_BINARIES=(kube-apiserver kubectl kubelet kube-controller-manager kube-scheduler)
# containerd the tests run: a folder under hack/containerd pins it (built
# from its Go module, with Debian's runc), or "debian" for Debian's own
# containerd package (1.6, the fallback).
CONTAINERD_VERSION=${CONTAINERD_VERSION:-$(pin CONTAINERD_VERSION)}
CONTAINERD_UPGRADE_VERSION=$(pin CONTAINERD_UPGRADE_VERSION)  # the restart tests upgrade to it
CONTAINERD_BINARIES=(containerd containerd-shim-runc-v2 ctr)
CRIO_VERSION=$(pin CRIO_VERSION)            # hack/crio/<version> pins CRI-O's module
CRIO_RUNC_VERSION=$(pin CRIO_RUNC_VERSION)  # and hack/runc/<version> the runc it runs
CRIO_CONMON_DEB=$(pin CRIO_CONMON_DEB)      # Debian's conmon package, at this version
PROMETHEUS_MODULE_VERSION=$(pin PROMETHEUS_MODULE_VERSION)  # internal/pins' test checks hack/tools/go.mod against it
ALERTMANAGER_VERSION=$(pin ALERTMANAGER_VERSION)            # and hack/alertmanager/go.mod
HELM_MODULE_VERSION=$(pin HELM_MODULE_VERSION)          # and hack/helm/go.mod
NPD_VERSION=$(pin NPD_VERSION)                          # and hack/npd/go.mod: node-problem-detector, for the footprint benchmark
CSI_ATTACHER_VERSION=$(pin CSI_ATTACHER_VERSION)        # and hack/csi/go.mod: the CSI sidecars the volume tests run
CSI_PROVISIONER_VERSION=$(pin CSI_PROVISIONER_VERSION)
NHC_VERSION=$(pin NHC_VERSION)                          # and hack/nhc/go.mod: the NodeHealthCheck controller
APT_PACKAGES=(containerd runc containernetworking-plugins etcd-server systemd ca-certificates curl unzip git gcc libc6-dev libseccomp-dev pkg-config)

log() { printf '==> %s\n' "$*" >&2; }

# machine_text describes this machine for BENCHMARKS.md.
machine_text() {
  echo "$(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r), cgroup $(stat -fc %T /sys/fs/cgroup | sed 's/tmpfs/v1/; s/cgroup2fs/v2/')"
}

# need_root re-executes the calling script as root: through sudo when the
# user is not root and sudo is there, else it explains and exits. A root
# shell (a fresh Debian machine may have no sudo) runs on unchanged.
need_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  if command -v sudo >/dev/null 2>&1; then
    log "$1; re-running as root through sudo"
    exec sudo --preserve-env=HANGWATCH_CACHE,CI,GOPROXY,GOFLAGS "$ROOT/hack/$(basename "$0")" "${SCRIPT_ARGS[@]}"
  fi
  echo "$1: run it as root (sudo is not installed)" >&2
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# step NAME CMD... runs CMD (under set -e: a failure ends the script) and
# records how long it took, for step_times.
STEP_TIMES=() STEP_NAME="" STEP_START=0
step() {
  STEP_NAME=$1 STEP_START=$(date +%s)
  shift
  "$@"
  STEP_TIMES+=("$STEP_NAME|$(( $(date +%s) - STEP_START ))")
  STEP_NAME=""
}

# step_times prints each step's time and the total; a step that failed is
# marked so. Scripts call it on EXIT.
step_times() {
  local total=0 entry name secs
  [ -n "$STEP_NAME" ] && STEP_TIMES+=("$STEP_NAME (failed)|$(( $(date +%s) - STEP_START ))")
  log "time per step"
  for entry in "${STEP_TIMES[@]}"; do
    name=${entry%%|*}; secs=${entry##*|}; total=$((total + secs))
    printf '    %-36s %s\n' "$name" "$(fmt_secs "$secs")" >&2
  done
  printf '    %-36s %s\n' "whole command" "$(fmt_secs "$total")" >&2
}

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# ensure_packages installs the Debian packages that are missing.
ensure_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# go_ok tells whether `go` exists and is at least go.mod's toolchain
# (its newest patch release: older 1.26 releases lack security fixes that
# hangwatch's HTTP server relies on, such as GO-2026-6089's).
go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local want have
  want=$(awk '/^toolchain go/{sub(/^go/, "", $2); print $2}' "$ROOT/go.mod")
  [ -n "$want" ] || want=$(awk '/^go /{print $2}' "$ROOT/go.mod")
  have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ]
}

# ensure_go puts a Go toolchain on PATH, fetching the official toolchain
# module (golang.org/toolchain) from the Go module proxy when needed.
ensure_go() {
  export PATH="$PATH:/usr/local/go/bin"
  go_ok && return 0
  local arch dir proxy
  arch=$(dpkg --print-architecture)
  dir="$HANGWATCH_CACHE/go$GO_VERSION"
  if [ ! -x "$dir/bin/go" ]; then
    proxy=${GOPROXY:-https://proxy.golang.org}; proxy=${proxy%%,*}
    log "fetching Go $GO_VERSION from the Go module proxy"
    mkdir -p "$HANGWATCH_CACHE"
    curl -fsSL -o "$HANGWATCH_CACHE/go.zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$GO_VERSION.linux-$arch.zip"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    unzip -q "$HANGWATCH_CACHE/go.zip" -d "$dir.tmp"
    mv "$dir.tmp/golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-$arch" "$dir"
    rm -rf "$dir.tmp" "$HANGWATCH_CACHE/go.zip"
  fi
  export PATH="$dir/bin:$PATH"
  go_ok || { echo "Go at $dir is not usable" >&2; exit 1; }
}

# ensure_golangci_lint builds the pinned linter from the module proxy.
ensure_golangci_lint() {
  local bin="$HANGWATCH_CACHE/bin/golangci-lint-$GOLANGCI_LINT_VERSION"
  if [ ! -x "$bin" ]; then
    log "building golangci-lint $GOLANGCI_LINT_VERSION (once; cached in $HANGWATCH_CACHE)"
    mkdir -p "$HANGWATCH_CACHE/bin"
    (cd "$HANGWATCH_CACHE" && GOBIN="$HANGWATCH_CACHE/bin/tmp" GOFLAGS= go install -trimpath -gcflags "$BUILD_GCFLAGS" -ldflags "-s -w" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION")
    mv "$HANGWATCH_CACHE/bin/tmp/golangci-lint" "$bin"
    rmdir "$HANGWATCH_CACHE/bin/tmp"
  fi
  GOLANGCI_LINT=$bin
}

# hangwatch_version is the version stamped into builds: a tag, else
# v0.0.0-<commit>.
hangwatch_version() {
  local v
  v=$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
  case "$v" in v*) ;; *) v="v0.0.0-$v" ;; esac
  echo "$v"
}

# BUILD_TAGS are hangwatch's build tags (internal/pins/pins.env says why;
# test/harness.BuildTags reads the same pin).
BUILD_TAGS=$(pin BUILD_TAGS)
# BUILD_GCFLAGS: every binary the scripts build to run is compiled without
# DWARF (internal/pins/pins.env says why); test/harness builds hangwatch
# with the same flags as build_hangwatch, so the two share their compiles.
BUILD_GCFLAGS=$(pin BUILD_GCFLAGS)

# build_hangwatch writes bin/hangwatch, static, with version information.
# build_hangwatch [GOARCH OUT [MAIN]] builds the static binary (MAIN, default
# ./cmd/hangwatch), for this machine
# into bin/hangwatch, or for linux/GOARCH into OUT (pure Go cross-build).
build_hangwatch() {
  local arch=${1:-} out=${2:-bin/hangwatch} main=${3:-./cmd/hangwatch}
  local v commit date pkg=k8s.io/component-base/version
  v=$(hangwatch_version)
  commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo "")
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local major minor tree=clean
  case "$v" in *-dirty) tree=dirty ;; esac
  major=$(echo "$v" | sed -E 's/^v([0-9]+)\..*/\1/')
  minor=$(echo "$v" | sed -E 's/^v[0-9]+\.([0-9]+).*/\1/')
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=${arch:-$(go env GOARCH)} go build -tags "$BUILD_TAGS" -trimpath -gcflags "$BUILD_GCFLAGS" -o "$out" \
    -ldflags "-s -w -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=$tree -X $pkg.buildDate=$date" \
    "$main")
}

# ensure_kube_binaries builds the pinned Kubernetes binaries the tests run
# from the k8s.io/kubernetes module (hack/kube/<version> pins it and its
# staging modules) into $HANGWATCH_CACHE/kube-<version>, once per machine:
# 5-10 minutes on two cores with an empty Go cache, and points the harness
# at them. Version ldflags as the release build sets them.
ensure_kube_binaries() {
  build_kube "$KUBE_VERSION" "${KUBE_BINARIES[@]}"
  export HANGWATCH_KUBE_BIN="$HANGWATCH_CACHE/kube-$KUBE_VERSION" HANGWATCH_KUBE_VERSION="$KUBE_VERSION"
}

# ensure_kubelet VERSION builds only that release's kubelet (hack/e2e.sh's
# matrix runs older kubelets against the default control plane).
ensure_kubelet() { build_kube "$1" kubelet; }

# build_kube VERSION BINARY... builds the binaries of VERSION that are not
# in the cache yet.
build_kube() {
  local version=$1; shift
  local dir="$HANGWATCH_CACHE/kube-$version" missing=() b
  for b in "$@"; do [ -x "$dir/$b" ] || missing+=("$b"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ -f "$ROOT/hack/kube/$version/go.mod" ] || { echo "no hack/kube/$version/go.mod pins Kubernetes $version" >&2; return 1; }
  log "building Kubernetes $version: ${missing[*]} (once; cached in $dir)"
  local major minor pkgs=() v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version flags=""
  major=$(echo "$version" | sed -E 's/^v([0-9]+)\..*/\1/')
  minor=$(echo "$version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')
  for p in $v $cv; do
    flags="$flags -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  mkdir -p "$dir.tmp"
  (cd "$ROOT/hack/kube/$version" && GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" -ldflags "-s -w$flags" -o "$dir.tmp/" "${pkgs[@]}")
  mkdir -p "$dir"
  for b in "${missing[@]}"; do mv "$dir.tmp/$b" "$dir/$b"; done
  rmdir "$dir.tmp"
}

# ensure_containerd builds the pinned containerd, its runc shim and ctr
# from the containerd Go module (hack/containerd/<version> pins it) into
# $HANGWATCH_CACHE/containerd-<version>, once per machine (1-7 minutes on
# two cores), and points the harness at them through
# $HANGWATCH_CONTAINERD_BIN. Pure Go (CGO_ENABLED=0): no btrfs or devmapper
# snapshotters, which the tests do not use. "debian" leaves the harness on
# the containerd of the Debian package.
ensure_containerd() {
  if [ "$CONTAINERD_VERSION" = debian ]; then
    export HANGWATCH_CONTAINERD_BIN=debian
    return 0
  fi
  build_containerd "$CONTAINERD_VERSION"
  export HANGWATCH_CONTAINERD_BIN="$HANGWATCH_CACHE/containerd-$CONTAINERD_VERSION"
}

# ensure_upgrade_containerd builds the second containerd the restart tests
# upgrade to in place (it has the CRI list streams, which the tests use).
ensure_upgrade_containerd() {
  build_containerd "$CONTAINERD_UPGRADE_VERSION"
  export HANGWATCH_CONTAINERD_UPGRADE_BIN="$HANGWATCH_CACHE/containerd-$CONTAINERD_UPGRADE_VERSION"
}

# build_containerd VERSION builds that containerd's binaries not yet cached.
build_containerd() {
  local version=$1 dir="$HANGWATCH_CACHE/containerd-$1" missing=() b pkgs=()
  for b in "${CONTAINERD_BINARIES[@]}"; do [ -x "$dir/$b" ] || missing+=("$b"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ -f "$ROOT/hack/containerd/$version/go.mod" ] || { echo "no hack/containerd/$version/go.mod pins containerd $version" >&2; return 1; }
  log "building containerd $version: ${missing[*]} (once; cached in $dir)"
  for b in "${missing[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$b"); done
  local v=github.com/containerd/containerd/v2/version
  mkdir -p "$dir.tmp"
  (cd "$ROOT/hack/containerd/$version" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
    -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w -X $v.Version=$version -X $v.Revision=module" \
    -o "$dir.tmp/" "${pkgs[@]}")
  mkdir -p "$dir"
  for b in "${missing[@]}"; do mv "$dir.tmp/$b" "$dir/$b"; done
  rmdir "$dir.tmp"
}

# ensure_crio builds the pinned CRI-O with what it runs into
# $HANGWATCH_CACHE/crio-<version> once per machine (about 2 minutes on two
# cores from a warm module cache), installs Debian's conmon at its pinned
# version, and points the harness at them through $HANGWATCH_CRIO_BIN:
#   - crio from its Go module (no replace directives, so a module of ours
#     that requires it builds it), with the tags that need no C library
#     but libseccomp's (containers_image_openpgp: no gpgme; no btrfs);
#   - pinns, its namespace pinner, from the module's C sources (static);
#   - runc from its Go module at the version CRI-O's dependencies.yaml
#     names (Debian's 1.1.5 is older than CRI-O 1.36 tests with).
ensure_crio() {
  local dir="$HANGWATCH_CACHE/crio-$CRIO_VERSION" mod
  if ! dpkg-query -W -f='${Version}' conmon 2>/dev/null | grep -qx "$CRIO_CONMON_DEB"; then
    log "installing Debian's conmon $CRIO_CONMON_DEB"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "conmon=$CRIO_CONMON_DEB" >/dev/null
  fi
  export HANGWATCH_CRIO_BIN="$dir"
  [ -x "$dir/crio" ] && [ -x "$dir/pinns" ] && [ -x "$dir/runc" ] && return 0
  log "building CRI-O $CRIO_VERSION, its pinns and runc $CRIO_RUNC_VERSION (once; cached in $dir)"
  mkdir -p "$dir.tmp"
  (cd "$ROOT/hack/crio/$CRIO_VERSION" && CGO_ENABLED=1 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
    -tags "containers_image_ostree_stub containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper btrfs_noversion seccomp" \
    -ldflags "-s -w" -o "$dir.tmp/crio" github.com/cri-o/cri-o/cmd/crio)
  mod=$(cd "$ROOT/hack/crio/$CRIO_VERSION" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)
  gcc -std=c99 -Os -Wall -Wextra -static -o "$dir.tmp/pinns" "$mod"/pinns/src/*.c
  strip -s "$dir.tmp/pinns"
  (cd "$ROOT/hack/runc/$CRIO_RUNC_VERSION" && CGO_ENABLED=1 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
    -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w -X main.version=${CRIO_RUNC_VERSION#v}" \
    -o "$dir.tmp/runc" github.com/opencontainers/runc)
  mkdir -p "$dir"
  mv "$dir.tmp/crio" "$dir.tmp/pinns" "$dir.tmp/runc" "$dir/"
  rmdir "$dir.tmp"
}

# ensure_cached_tool NAME VERSION MODULE_DIR PACKAGE [TAGS] builds a Go tool
# pinned with its dependencies in MODULE_DIR/go.mod into
# $HANGWATCH_CACHE/bin/NAME, with the build tags TAGS, once per machine and
# version.
ensure_cached_tool() {
  local name=$1 version=$2 dir=$3 pkg=$4 tags=${5:-}
  local bin="$HANGWATCH_CACHE/bin/$name" stamp="$HANGWATCH_CACHE/bin/$name.version"
  if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then return 0; fi
  log "building $name ($version; once, cached in $HANGWATCH_CACHE)"
  mkdir -p "$HANGWATCH_CACHE/bin"
  (cd "$ROOT/$dir" && GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" -tags "$tags" -ldflags "-s -w" -o "$bin.tmp" "$pkg")
  mv "$bin.tmp" "$bin"
  echo "$version" > "$stamp"
}

# ensure_prometheus builds Prometheus and its promtool from Prometheus' Go
# module (hack/tools pins it): the alert and dashboard tests run promtool,
# and the alert path's test runs Prometheus itself. Built with Prometheus'
# own remove_all_sd tag (plugins/plugin_*.go): the tests scrape static
# targets, and the cloud providers' discovery SDKs are most of its compile.
ensure_prometheus() {
  export HANGWATCH_PROMTOOL="$HANGWATCH_CACHE/bin/promtool" HANGWATCH_PROMETHEUS="$HANGWATCH_CACHE/bin/prometheus"
  ensure_cached_tool promtool "$PROMETHEUS_MODULE_VERSION" hack/tools github.com/prometheus/prometheus/cmd/promtool remove_all_sd
  ensure_cached_tool prometheus "$PROMETHEUS_MODULE_VERSION" hack/tools github.com/prometheus/prometheus/cmd/prometheus remove_all_sd
}

# ensure_alertmanager builds Alertmanager from its Go module (hack/alertmanager
# pins it and holds its checksums) into $HANGWATCH_CACHE/bin, once per
# machine, with the module's own go.mod, as its release is built. Its web
# UI is compiled JavaScript that the module does not hold (ui/app/dist,
# which ui/web.go embeds), so a copy of the module gets a one-page
# stand-in there; the API, routing and receivers are Alertmanager's own.
ensure_alertmanager() {
  local mod=github.com/prometheus/alertmanager src copy="$HANGWATCH_CACHE/src/alertmanager-$ALERTMANAGER_VERSION"
  local bin="$HANGWATCH_CACHE/bin/alertmanager" stamp="$HANGWATCH_CACHE/bin/alertmanager.version"
  export HANGWATCH_ALERTMANAGER="$bin"
  if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$ALERTMANAGER_VERSION" ]; then return 0; fi
  grep -q "$mod $ALERTMANAGER_VERSION" "$ROOT/hack/alertmanager/go.mod" || { echo "hack/alertmanager/go.mod does not pin $mod $ALERTMANAGER_VERSION" >&2; return 1; }
  log "building alertmanager $ALERTMANAGER_VERSION (once; cached in $HANGWATCH_CACHE)"
  src=$(cd "$ROOT/hack/alertmanager" && GOFLAGS=-mod=mod go mod download "$mod" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$mod")
  [ -d "$src" ] || { echo "the module cache holds no $mod $ALERTMANAGER_VERSION" >&2; return 1; }
  rm -rf "$copy" && mkdir -p "$(dirname "$copy")" && cp -r "$src" "$copy" && chmod -R u+w "$copy"
  mkdir -p "$copy/ui/app/dist/elm" "$copy/ui/app/dist/mantine"
  for ui in elm mantine; do
    echo '<p>This Alertmanager was built by hangwatch'"'"'s tests without its web UI.</p>' > "$copy/ui/app/dist/$ui/index.html"
  done
  mkdir -p "$HANGWATCH_CACHE/bin"
  (cd "$copy" && CGO_ENABLED=0 go build -trimpath -gcflags "$BUILD_GCFLAGS" -ldflags "-s -w" -o "$bin.tmp" ./cmd/alertmanager)
  mv "$bin.tmp" "$bin" && rm -rf "$copy"
  echo "$ALERTMANAGER_VERSION" > "$stamp"
}

# ensure_helm builds helm (hack/helm); the chart tests lint and render the
# chart with it.
ensure_helm() {
  export HANGWATCH_HELM="$HANGWATCH_CACHE/bin/helm"
  ensure_cached_tool helm "$HELM_MODULE_VERSION" hack/helm helm.sh/helm/v3/cmd/helm
}

# ensure_npd builds node-problem-detector from its Go module (hack/npd pins
# it) into $HANGWATCH_CACHE/npd-<version>, once per machine, as its Makefile
# does with ENABLE_JOURNALD=0: CGO_ENABLED=0 and without the journald build
# tag (its journald log watcher needs cgo); -trimpath and stripped, as
# build_hangwatch builds hangwatch, so the binaries compare. Its default
# kernel monitor config (config/kernel-monitor.json: the kmsg plugin on
# /dev/kmsg) is copied beside it. Points the footprint benchmark
# (TestFootprintBesideNPD) at it through $HANGWATCH_NPD_BIN.
ensure_npd() {
  local dir="$HANGWATCH_CACHE/npd-$NPD_VERSION" mod=k8s.io/node-problem-detector src
  if [ ! -x "$dir/node-problem-detector" ] || [ ! -f "$dir/kernel-monitor.json" ]; then
    grep -q "$mod $NPD_VERSION" "$ROOT/hack/npd/go.mod" || { echo "hack/npd/go.mod does not pin $mod $NPD_VERSION" >&2; return 1; }
    log "building node-problem-detector $NPD_VERSION (once; cached in $dir)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    (cd "$ROOT/hack/npd" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
      -ldflags "-s -w -X $mod/pkg/version.version=$NPD_VERSION" \
      -o "$dir.tmp/node-problem-detector" "$mod/cmd/nodeproblemdetector")
    src=$(cd "$ROOT/hack/npd" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$mod")
    cp "$src/config/kernel-monitor.json" "$dir.tmp/"
    chmod u+w "$dir.tmp/kernel-monitor.json"   # the module cache's files are read-only
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  export HANGWATCH_NPD_BIN="$dir/node-problem-detector"
}

# ensure_csi builds kubernetes-csi's external-attacher and
# external-provisioner from their Go modules (hack/csi/go.mod pins them)
# into $HANGWATCH_CACHE/csi-<attacher>-<provisioner>, once per machine
# (about 2.5 minutes on two cores when the Kubernetes modules are already
# in the module cache), and points the harness at them through
# $HANGWATCH_CSI_BIN. The CSI driver they drive is the harness's own
# (test/csidriver, a module of its own that the harness builds when a
# test starts it); building it here fetches its modules ahead of the tests.
ensure_csi() {
  local dir="$HANGWATCH_CACHE/csi-$CSI_ATTACHER_VERSION-$CSI_PROVISIONER_VERSION"
  if [ ! -x "$dir/csi-attacher" ] || [ ! -x "$dir/csi-provisioner" ]; then
    log "building the CSI sidecars: external-attacher $CSI_ATTACHER_VERSION, external-provisioner $CSI_PROVISIONER_VERSION (once; cached in $dir)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    (cd "$ROOT/hack/csi" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
      -ldflags "-s -w -X main.version=$CSI_ATTACHER_VERSION" -o "$dir.tmp/csi-attacher" \
      github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher)
    (cd "$ROOT/hack/csi" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
      -ldflags "-s -w -X main.version=$CSI_PROVISIONER_VERSION" -o "$dir.tmp/csi-provisioner" \
      github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner)
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  (cd "$ROOT/test/csidriver" && CGO_ENABLED=0 go build -trimpath -gcflags "$BUILD_GCFLAGS" -o /dev/null .)
  export HANGWATCH_CSI_BIN="$dir"
}

# ensure_nhc builds medik8s' node-healthcheck-operator (the NodeHealthCheck
# controller) from its Go module (hack/nhc pins it) into
# $HANGWATCH_CACHE/nhc-<version>, once per machine, as its Dockerfile does:
# CGO_ENABLED=0, its version package stamped; -trimpath and stripped. Beside
# it go the files of the module's config/ the NodeHealthCheck test applies:
# the NodeHealthCheck CRD (crd/), the controller's shipped RBAC (rbac/) and
# its validating webhook's configuration (webhook/).
# Points the test (TestNodeHealthCheckRemediatesOnRuntimeHung) at it
# through $HANGWATCH_NHC_BIN.
ensure_nhc() {
  local dir="$HANGWATCH_CACHE/nhc-$NHC_VERSION" mod=github.com/medik8s/node-healthcheck-operator src
  if [ ! -x "$dir/node-healthcheck-operator" ] || [ ! -f "$dir/crd/remediation.medik8s.io_nodehealthchecks.yaml" ] || [ ! -f "$dir/webhook/manifests.yaml" ]; then
    grep -q "$mod $NHC_VERSION" "$ROOT/hack/nhc/go.mod" || { echo "hack/nhc/go.mod does not pin $mod $NHC_VERSION" >&2; return 1; }
    log "building node-healthcheck-operator $NHC_VERSION (once; cached in $dir)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/crd" "$dir.tmp/rbac" "$dir.tmp/webhook"
    (cd "$ROOT/hack/nhc" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags "$BUILD_GCFLAGS" \
      -ldflags "-s -w -X $mod/version.Version=$NHC_VERSION -X $mod/version.GitCommit=$NHC_VERSION" \
      -o "$dir.tmp/node-healthcheck-operator" "$mod/cmd")
    src=$(cd "$ROOT/hack/nhc" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$mod")
    cp "$src"/config/crd/bases/*.yaml "$dir.tmp/crd/"
    cp "$src"/config/rbac/*.yaml "$dir.tmp/rbac/"
    cp "$src"/config/webhook/manifests.yaml "$dir.tmp/webhook/"
    chmod -R u+w "$dir.tmp"   # the module cache's files are read-only
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  export HANGWATCH_NHC_BIN="$dir/node-healthcheck-operator"
}

# raise_inotify_instances lifts fs.inotify.max_user_instances to at least
# WANT for the run; restore_inotify_instances puts the value back (the
# test command's finish hook calls it, whatever ended the run). Every
# kubelet the tests run holds about 7 inotify instances, containerd 2,
# kube-apiserver 3, systemd 3, all as root; side by side they passed the
# kernel's default of 128, and containerd's CRI plugin and a kubelet's
# cAdvisor then failed to start ("inotify_init: too many open files").
# Kubernetes nodes commonly set it far higher (kind sets 8192).
INOTIFY_INSTANCES_BEFORE=
raise_inotify_instances() {
  local f=/proc/sys/fs/inotify/max_user_instances want=$1 now
  now=$(cat "$f" 2>/dev/null) || return 0
  [ "$now" -lt "$want" ] || return 0
  if echo "$want" 2>/dev/null > "$f"; then
    INOTIFY_INSTANCES_BEFORE=$now
    log "fs.inotify.max_user_instances $now -> $want while the tests run (put back at the end)"
  else
    log "warning: fs.inotify.max_user_instances is $now and cannot be raised: tests side by side may run out of inotify instances"
  fi
}
restore_inotify_instances() {
  [ -z "$INOTIFY_INSTANCES_BEFORE" ] && return 0
  echo "$INOTIFY_INSTANCES_BEFORE" 2>/dev/null > /proc/sys/fs/inotify/max_user_instances || log "warning: could not put fs.inotify.max_user_instances back to $INOTIFY_INSTANCES_BEFORE"
  INOTIFY_INSTANCES_BEFORE=
}

# measurements_file NAME prints $HANGWATCH_CACHE/NAME.jsonl, emptied: the
# tests of a run append their measurements to it when
# $HANGWATCH_MEASUREMENTS names it (test/measurements).
measurements_file() {
  local f="$HANGWATCH_CACHE/$1.jsonl"
  mkdir -p "$HANGWATCH_CACHE" && : > "$f"
  echo "$f"
}

# publish_section SECTION HEADING LOG RC FILE [-var KEY=VALUE...] renders
# SECTION from the measurements in FILE (hack/benchtable); when every
# measurement it names is there, it saves them, with the -var values, as
# the section's records (hack/benchtable/records/SECTION.jsonl) and renders
# BENCHMARKS.md again from all the records. When one is missing, benchtable
# names it and the records and BENCHMARKS.md are left as they were. HEADING
# is kept for the callers: the headings are in hack/benchtable/page.md.tmpl.
# It returns RC, go test's status, or 1 when that was 0 and the section failed.
publish_section() {
  local section=$1 log=$3 rc=$4 measured=$5
  shift 5
  if ! benchtable -measurements "$measured" -section "$section" -save -w "$@" >/dev/null; then
    log "BENCHMARKS.md left as it was (go test exit $rc); the full log is $log"
    return $(( rc == 0 ? 1 : rc ))
  fi
  log "BENCHMARKS.md updated from hack/benchtable/records/$section.jsonl (go test exit $rc); the full log is $log"
  return "$rc"
}

# benchtable ARGS... runs hack/benchtable on this checkout's records and
# BENCHMARKS.md: it renders a section from recorded measurements
# (-measurements FILE -section NAME -var KEY=VALUE...; -save keeps them as
# the section's records, -w renders the page again), records `go test
# -bench` output (-gobench FILE), and fails, naming them, when
# measurements a section names were not recorded.
benchtable() {
  (cd "$ROOT" && go build -o "$HANGWATCH_CACHE/bin/benchtable" ./hack/benchtable)
  "$HANGWATCH_CACHE/bin/benchtable" -records "$ROOT/hack/benchtable/records" -page "$ROOT/BENCHMARKS.md" "$@"
}

# ---- a run's own temp dir, swept whatever ends the script ----
# A script that starts containerd (through the harness: the demo, go test)
# calls run_scope NAME [HOOK] once it runs as root. The run gets a temp dir
# of its own, $RUN_TMP ($TMPDIR/hangwatch-NAME.XXXXXX), exported as TMPDIR
# to all it starts: the harness makes containerd's, CRI-O's, systemd's, the
# kubelet's and the control plane's dirs there and go test its binaries.
# On exit, and on SIGINT, SIGTERM, SIGHUP or SIGPIPE, end_run_scope stops
# the child run_child started, sweeps the dir (sweep_run_scope), calls HOOK
# and exits. The sweep is needed: a go test binary that a Ctrl-C kills runs
# no cleanup of its own, nor does a Go program killed by SIGPIPE (its output
# piped to a tee that the same Ctrl-C ended); containerd's shims, the pods'
# processes, their overlay and shm mounts and the dirs are left behind.
# The cleanup's lines also go to $HANGWATCH_CACHE/NAME-cleanup.log, which
# outlives a terminal or a pipe that is gone.
RUN_TMP="" RUN_SCOPE_HOOK="" RUN_SCOPE_TMPDIR="" RUN_SCOPE_CHILD="" RUN_SCOPE_LOG=/dev/null
run_scope() {
  RUN_SCOPE_HOOK=${2:-}
  RUN_SCOPE_TMPDIR=${TMPDIR:-/tmp}
  RUN_TMP=$(mktemp -d "$RUN_SCOPE_TMPDIR/hangwatch-$1.XXXXXX")
  export TMPDIR=$RUN_TMP
  mkdir -p "$HANGWATCH_CACHE" && RUN_SCOPE_LOG="$HANGWATCH_CACHE/$1-cleanup.log" &&
    echo "$(date -u +%FT%TZ) pid $$: run dir $RUN_TMP" > "$RUN_SCOPE_LOG" || RUN_SCOPE_LOG=/dev/null
  trap 'end_run_scope $?' EXIT
  trap 'end_run_scope 129' HUP
  trap 'end_run_scope 130' INT
  trap 'end_run_scope 141' PIPE
  trap 'end_run_scope 143' TERM
}

# run_child CMD... runs CMD in the background and waits for it, so that a
# signal to the script (SIGTERM from timeout(1), SIGHUP) runs end_run_scope
# at once, which passes SIGTERM on to CMD and waits for CMD's own cleanup;
# a foreground CMD would hold the trap back until it exits. CMD's status
# is run_child's. (Started in the background by a script, CMD begins with
# SIGINT ignored: a Go program that notifies SIGINT takes it all the same.)
run_child() {
  local rc=0
  "$@" &
  RUN_SCOPE_CHILD=$!
  wait "$RUN_SCOPE_CHILD" || rc=$?
  RUN_SCOPE_CHILD=""
  return "$rc"
}

# end_run_scope RC ends the script with RC, cleaning up first. Nothing in
# it may end it early: further SIGINT/SIGTERM/SIGHUP (a second Ctrl-C) and
# SIGPIPE are ignored, no step's failure aborts it (set +e), and its
# messages go to stderr only while stderr takes them (run_scope_say).
end_run_scope() {
  local rc=$1 i
  trap '' HUP INT PIPE TERM
  trap - EXIT
  set +e +u +o pipefail
  export TMPDIR=$RUN_SCOPE_TMPDIR
  echo "$(date -u +%FT%TZ) ending with $rc$( ((rc > 128)) && echo " (SIG$(kill -l "$((rc - 128))" 2>/dev/null))")" >>"$RUN_SCOPE_LOG" 2>/dev/null
  if [ -n "$RUN_SCOPE_CHILD" ] && kill -0 "$RUN_SCOPE_CHILD" 2>/dev/null; then
    kill -TERM "$RUN_SCOPE_CHILD" 2>/dev/null
    for ((i = 0; i < 900; i++)); do   # the demo's cleanup takes seconds; 90 at most
      run_scope_alive "$RUN_SCOPE_CHILD" || break   # not kill -0: a zombie answers it
      sleep 0.1
    done
    kill -KILL "$RUN_SCOPE_CHILD" 2>/dev/null
    wait "$RUN_SCOPE_CHILD" 2>/dev/null
  fi
  sweep_run_scope
  [ -z "$RUN_SCOPE_HOOK" ] || "$RUN_SCOPE_HOOK"
  exit "$rc"
}

# run_scope_say MSG: log's line in the cleanup's log, and on stderr while
# stderr takes it; once a write fails (the reader of its pipe is gone),
# stdout and stderr go to /dev/null for the rest of the cleanup.
run_scope_say() {
  echo "$(date -u +%FT%TZ) $*" >>"$RUN_SCOPE_LOG" 2>/dev/null
  { printf '==> %s\n' "$*" >&3; } 3>&2 2>/dev/null || exec >/dev/null 2>&1
}

# sweep_run_scope kills what the run left (run_scope_pids), unmounts every
# mount under $RUN_TMP, deepest first, and removes it; when the run cleaned
# up after itself, it only removes the empty dir. It runs once.
sweep_run_scope() {
  local dir=$RUN_TMP pids all="" round i p mounts m left
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  RUN_TMP=""
  disown -a 2>/dev/null   # no "Killed" notices for the script's own jobs
  export TMPDIR=$RUN_SCOPE_TMPDIR   # what it runs is none of the run's
  for round in 1 2 3; do   # again, for what forked while it was killed
    pids=$(run_scope_pids "$dir")
    [ -n "$pids" ] || break
    all+=$(ps -o comm= -p "${pids// /,}" 2>/dev/null | tr '\n' ' ')
    kill -KILL $pids 2>/dev/null
    for ((i = 0; i < 100; i++)); do   # 10s at most
      left=""
      for p in $pids; do run_scope_alive "$p" && left=1 && break; done
      [ -n "$left" ] || break
      sleep 0.1
    done
  done
  [ -z "$all" ] || run_scope_say "killed what the run left: $(tr ' ' '\n' <<<"$all" | sed '/^$/d' | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')"
  mounts=$(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
  for m in $mounts; do umount -l "$m" 2>/dev/null; done
  [ -z "$mounts" ] || run_scope_say "unmounted what was left mounted under $dir: $(wc -l <<<"$mounts")"
  left=$(find "$dir" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
  [ -z "$left" ] || run_scope_say "left in $dir (removed now): $left"
  rm -rf --one-file-system "$dir" 2>/dev/null
  if [ -e "$dir" ]; then
    run_scope_say "could not remove $dir: $(grep -cF "$dir" /proc/self/mountinfo) mounts still under it"
  elif [ -z "$all$mounts$left" ]; then
    echo "$(date -u +%FT%TZ) nothing was left; $dir removed" >>"$RUN_SCOPE_LOG" 2>/dev/null
  fi
  return 0
}

# run_scope_alive PID: PID is there and not a zombie (one whose new parent
# has not reaped it yet is as dead).
run_scope_alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ]
}

# run_scope_pids DIR prints the processes of the run: those whose command
# line names DIR or whose environment has TMPDIR=DIR (all it started, but
# this shell), and their descendants (the pods' processes, children of
# containerd's shims), never this shell.
run_scope_pids() {
  local dir=$1 pat roots
  # a regular expression for DIR that its grep's own command line does not match
  pat="[${dir:0:1}]$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"${dir:1}")"
  # bounded: reading a process's cmdline or environment waits on its memory map,
  # which a process stuck in the kernel may hold
  roots=$( { timeout -s KILL 10 grep -lazE -- "$pat(/|\$)" /proc/[0-9]*/cmdline
    timeout -s KILL 10 grep -lazxE -- "TMPDIR=$pat" /proc/[0-9]*/environ; } 2>/dev/null | cut -d/ -f3 | sort -u | tr '\n' ' ')
  [ -n "${roots// /}" ] || return 0
  ps -e -o pid= -o ppid= | awk -v roots="$roots" -v self="$$" '
    { kids[$2] = kids[$2] " " $1 }
    END {
      n = split(roots, queue, " ")
      for (i = 1; i <= n; i++) {
        p = queue[i]
        if (p in seen || p == self || p == 1) continue
        seen[p] = 1; out = out (out == "" ? "" : " ") p
        m = split(kids[p], k, " ")
        for (j = 1; j <= m; j++) queue[++n] = k[j]
      }
      print out
    }'
}

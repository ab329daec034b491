package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// HangingStarts make a harness containerd's start path hang where a
// node's does, below the CRI: an OCI runtime handler (HangHandler, as
// the NVIDIA runtime is one) whose `runc create` waits, and a pod
// network whose CNI plugin's ADD waits (a wrapper around the machine's
// loopback plugin). Each waits until Release, at most 150 s, or until the
// process that called it is gone, so nothing outlives the test.
type HangingStarts struct {
	dir     string // the wrappers and the release file
	network bool   // the pod network's ADD waits too
}

// HangHandler is the runtime handler (a RuntimeClass's handler) whose
// creates wait.
const HangHandler = "hangwatch-hang"

// waitForRelease is the shell loop both wrappers run before going on.
const waitForRelease = `i=0
while [ ! -e %[1]q ] && [ $i -lt 300 ] && kill -0 $PPID 2>/dev/null; do sleep 0.5; i=$((i+1)); done
`

// The release files, one per wrapper.
const (
	releaseRuntime = "RELEASE-runtime"
	releaseNetwork = "RELEASE-network"
)

// hangRunc is runc, whose create waits.
const hangRunc = `#!/bin/sh
for a in "$@"; do
  if [ "$a" = create ]; then
` + waitForRelease + `    break
  fi
done
exec runc "$@"
`

// hangCNI is a CNI plugin whose ADD waits, then sets up the pod's lo with
// the machine's loopback plugin and gives eth0 a documentation address
// (nothing is routed to it); DEL is loopback's.
const hangCNI = `#!/bin/sh
conf=$(cat)
if [ "$CNI_COMMAND" = ADD ]; then
` + waitForRelease + `  printf '%%s' "$conf" | CNI_IFNAME=lo /usr/lib/cni/loopback >/dev/null || exit 1
  printf '{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"%%s"}],"ips":[{"version":"4","address":"192.0.2.%%d/24","interface":0}]}' "$CNI_NETNS" $(( $$ %% 200 + 20 ))
  exit 0
fi
printf '%%s' "$conf" | CNI_IFNAME=lo exec /usr/lib/cni/loopback
`

const hangCNIConf = `{"cniVersion": "0.4.0", "name": "hangwatch-hang", "plugins": [{"type": "hangwatch-hang-cni"}]}`

// ReleaseRuntime lets HangHandler's creates go on, now and from now on.
func (h *HangingStarts) ReleaseRuntime() { h.release(releaseRuntime) }

// ReleaseNetwork lets the pod network's ADDs go on, now and from now on.
func (h *HangingStarts) ReleaseNetwork() { h.release(releaseNetwork) }

func (h *HangingStarts) release(name string) {
	_ = os.WriteFile(filepath.Join(h.dir, name), nil, 0o644)
}

// StartHangingT starts containerd with a HangHandler runtime
// handler and, with network, a pod network whose ADD waits; both are let
// go at the test's end, before containerd stops.
func StartHangingT(t testing.TB, network bool) (*Containerd, *HangingStarts) {
	t.Helper()
	harness.RequireRealParts(t)
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := harness.RuntimeDir("hwc-")
	if err != nil {
		t.Fatal(err)
	}
	h := &HangingStarts{dir: filepath.Join(dir, "hang"), network: network}
	c := newContainerd(dir, bin, "")
	c.starts = h
	t.Cleanup(c.Stop)
	t.Cleanup(func() { h.ReleaseRuntime(); h.ReleaseNetwork() }) // runs first: the waits end before containerd stops
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.start(ctx); err != nil {
		t.Fatalf("start containerd with hanging starts: %v", err)
	}
	return c, h
}

// cniBinDirs is configV3's bin_dirs entry for the wrappers' directory.
func (h *HangingStarts) cniBinDirs() string {
	if h == nil {
		return ""
	}
	return strconv.Quote(h.dir) + ", "
}

// configure writes the wrappers and adds the handler, and the network
// when asked for, to files.
func (h *HangingStarts) configure(c *Containerd, files map[string]string) error {
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return err
	}
	for name, w := range map[string]struct{ body, release string }{"hang-runc": {hangRunc, releaseRuntime}, "hangwatch-hang-cni": {hangCNI, releaseNetwork}} {
		if err := os.WriteFile(filepath.Join(h.dir, name), []byte(fmt.Sprintf(w.body, filepath.Join(h.dir, w.release))), 0o755); err != nil {
			return err
		}
	}
	files["config.toml"] += fmt.Sprintf(`[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%[1]s]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%[1]s.options]
  BinaryName = %[2]q
`, HangHandler, filepath.Join(h.dir, "hang-runc"))
	if h.network {
		delete(files, "cni/10-loopback.conflist")
		files["cni/10-hang.conflist"] = hangCNIConf
	}
	return nil
}

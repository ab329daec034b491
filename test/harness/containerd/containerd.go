package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// Containerd is a real containerd started by the harness.
type Containerd struct {
	Dir      string // temp dir holding config, root, state and the socket
	Socket   string // path of the CRI socket
	Endpoint string // unix:// endpoint of the socket
	Bin      Binaries
	// SystemdCgroup runs containers with runc's systemd cgroup driver
	// (runc's SystemdCgroup option), as a kubelet with cgroupDriver systemd
	// needs; only under systemd (StartUnderSystemdWith).
	SystemdCgroup bool
	// starts, when set before the start, hangs its start path
	// (StartHangingT).
	starts *HangingStarts
	systemd.RuntimeProcess
	conn *cri.Conn
}

// Runtime is a CRI client on the harness's own connection.
func (c *Containerd) Runtime() runtimeapi.RuntimeServiceClient { return c.conn.Runtime }

// configV2 is containerd 1.x's configuration (Debian's 1.6).
const configV2 = `version = 2
root = "%[1]s/root"
state = "%[1]s/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni"
`

// configV3 is containerd 2.x's: the CRI runtime and image services are
// plugins of their own, the stream server stays with the CRI plugin
// (containerd's docs/cri/config.md). NRI's socket is in the temp dir too:
// its default, /var/run/nri/nri.sock, is the machine's, and two
// containerds starting at once would both take it.
const configV3 = `version = 3
root = "%[1]s/root"
state = "%[1]s/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "%[1]s/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"
[debug]
  address = ""
[plugins.'io.containerd.internal.v1.opt']
  path = "%[1]s/opt"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "%[2]s"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [%[3]s"/usr/lib/cni"]
  conf_dir = "%[1]s/cni"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins.'io.containerd.nri.v1.nri']
  socket_path = "%[1]s/nri.sock"
`

// systemdCgroupV2 and systemdCgroupV3 give runc, the CRI's default
// runtime, the systemd cgroup driver, in each configuration version (the
// shipped config.toml's tables, containerd's docs/cri/config.md).
const systemdCgroupV2 = `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
`

const systemdCgroupV3 = `[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
`

// Start starts the default containerd (FindBinaries) in a
// new temp dir, imports the pause image and waits until CRI reports the
// runtime and network ready.
func Start(ctx context.Context) (*Containerd, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	return StartFrom(ctx, bin)
}

// newContainerd is a containerd of bin on dir, its socket there; unit is
// its systemd unit's name, "" when it runs as the harness's child.
func newContainerd(dir string, bin Binaries, unit string) *Containerd {
	c := &Containerd{Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), Bin: bin,
		RuntimeProcess: systemd.RuntimeProcess{DaemonName: "containerd", Unit: unit}}
	c.Endpoint = "unix://" + c.Socket
	return c
}

// StartFrom is Start with the given binaries.
func StartFrom(ctx context.Context, bin Binaries) (*Containerd, error) {
	dir, err := harness.RuntimeDir("hwc-")
	if err != nil {
		return nil, err
	}
	c := newContainerd(dir, bin, "")
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Containerd) start(ctx context.Context) error {
	if err := c.launch(ctx); err != nil {
		return err
	}
	tarPath := filepath.Join(c.Dir, "pause.tar")
	if err := harness.BuildPauseImage(tarPath); err != nil {
		return err
	}
	if err := c.ImportImage(ctx, tarPath); err != nil {
		return err
	}
	return c.waitImage(ctx, harness.PauseImage)
}

// waitImage waits until CRI's image service knows ref: containerd's CRI
// plugin learns of an image ctr imported from an event, a moment later,
// and a sandbox asked for before then pulls it from a registry that is
// not there.
func (c *Containerd) waitImage(ctx context.Context, ref string) error {
	var last error
	_, err := harness.Poll(ctx, 30*time.Second, fmt.Sprintf("%s to know the image %s", c, ref), func() bool {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := c.conn.Image.ImageStatus(callCtx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		last = err
		return err == nil && resp.GetImage() != nil
	}, harness.UnlessExited(c), harness.Explaining(func() string { return fmt.Sprintf("last: %v\n%s", last, c.logTail()) }))
	return err
}

// launch writes the configuration for c.Bin's version and starts
// containerd on c.Dir, waiting until it is ready. Its state in c.Dir is
// kept across launches, as on a node.
func (c *Containerd) launch(ctx context.Context) error {
	if err := c.writeConfig(); err != nil {
		return err
	}
	var err error
	c.conn, err = c.StartChild(ctx, c.Dir, c.Bin.env(), c.Bin.path("containerd"), []string{"--config", c.configPath()}, c.Endpoint, c.conn, c.logTail)
	return err
}

func (c *Containerd) configPath() string { return filepath.Join(c.Dir, "config.toml") }

// writeConfig writes the configuration for c.Bin's version and the CNI
// configuration into c.Dir.
func (c *Containerd) writeConfig() error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "cni"), 0o755); err != nil {
		return err
	}
	tmpl, systemd := configV3, systemdCgroupV3
	if c.Bin.Major < 2 {
		tmpl, systemd = configV2, systemdCgroupV2
	}
	args := []any{c.Dir, harness.PauseImage}
	if c.Bin.Major >= 2 {
		args = append(args, c.starts.cniBinDirs()) // configV3's bin_dirs before the machine's
	}
	config := fmt.Sprintf(tmpl, args...)
	if c.SystemdCgroup {
		config += systemd
	}
	files := map[string]string{
		"config.toml":              config,
		"cni/10-loopback.conflist": harness.LoopbackCNI,
	}
	if c.starts != nil {
		if c.Bin.Major < 2 {
			return fmt.Errorf("hanging starts need containerd 2.x's configuration, not %s", c.Bin.Version)
		}
		if err := c.starts.configure(c, files); err != nil {
			return err
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// StartRuntime starts containerd again on the same state with bin (an
// in-place upgrade when bin is another version) and waits until it is
// ready.
func (c *Containerd) StartRuntime(ctx context.Context, bin Binaries) error {
	c.Bin = bin
	if c.UnitSystemd != nil {
		return c.startUnit(ctx)
	}
	return c.launch(ctx)
}

// waitReady polls CRI Status until both runtime and network are ready.
func (c *Containerd) waitReady(ctx context.Context) error {
	return harness.WaitCRIReady(ctx, c.conn, c, c.logTail)
}

// ImportImage imports an OCI layout tarball into the k8s.io namespace.
func (c *Containerd) ImportImage(ctx context.Context, tarPath string) error {
	cmd := exec.CommandContext(ctx, c.Bin.path("ctr"), "--address", c.Socket, "-n", "k8s.io", "images", "import", tarPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarPath, err, out)
	}
	return nil
}

// logTail is the end of containerd's log, Dir/containerd.log either way.
func (c *Containerd) logTail() string {
	return harness.FileTail("containerd", filepath.Join(c.Dir, "containerd.log"), 15)
}

// Stop removes every pod through CRI, stops containerd by PID, kills any
// shim it left, unmounts what is left under Dir and removes Dir. Under
// systemd, stopping systemd ends containerd, its shims and containers, and
// the mounts of its namespace.
func (c *Containerd) Stop() {
	if c.Daemon != nil || c.UnitSystemd != nil {
		_ = c.Thaw()
		if c.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_ = harness.RemoveAllPods(ctx, c.conn.Runtime)
			cancel()
		}
		c.Daemon.Stop(10 * time.Second)
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	if c.UnitSystemd != nil {
		c.UnitSystemd.Stop()
	}
	killShims(c.Socket)
	harness.UnmountUnder(c.Dir)
	_ = syscall.Unmount(c.Dir, syscall.MNT_DETACH) // MakeSharedMount's
	_ = os.RemoveAll(c.Dir)
}

// killShims kills the runc shims whose command line names this containerd's
// socket, by PID, in case pod removal did not end them.
func killShims(socket string) { harness.KillProcessesNaming("containerd-shim", socket) }

// TagImage gives image src the name dst too (ctr images tag).
func (c *Containerd) TagImage(ctx context.Context, src, dst string) error {
	out, err := c.ctr(ctx, "images", "tag", "--force", src, dst)
	if err != nil {
		return fmt.Errorf("ctr images tag %s %s: %w: %s", src, dst, err, out)
	}
	return nil
}

func (c *Containerd) ctr(ctx context.Context, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, c.Bin.path("ctr"), append([]string{"--address", c.Socket, "-n", "k8s.io"}, args...)...).CombinedOutput()
}

// Where is containerd's RuntimePaths.
func (c *Containerd) Where() harness.RuntimePaths {
	return harness.RuntimePaths{Dir: c.Dir, Socket: c.Socket, Endpoint: c.Endpoint, NodeSocketDir: "/run/containerd", StateDir: filepath.Join(c.Dir, "state")}
}

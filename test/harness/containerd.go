package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// Containerd is a real containerd started by the harness.
type Containerd struct {
	Dir      string // temp dir holding config, root, state and the socket
	Socket   string // path of the CRI socket
	Endpoint string // unix:// endpoint of the socket
	proc     *process
	conn     *cri.Conn
}

// PID is containerd's process ID.
func (c *Containerd) PID() int { return c.proc.PID() }

// Runtime is a CRI client on the harness's own connection.
func (c *Containerd) Runtime() runtimeapi.RuntimeServiceClient { return c.conn.Runtime }

const configTemplate = `version = 2
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

const loopbackCNI = `{"cniVersion": "0.4.0", "name": "hangwatch-loopback", "plugins": [{"type": "loopback"}]}`

// StartContainerd starts containerd in a new temp dir, imports the pause
// image and waits until CRI reports the runtime and network ready.
func StartContainerd(ctx context.Context) (*Containerd, error) {
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s not installed (apt-get install containerd runc containernetworking-plugins): %w", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "hwc-")
	if err != nil {
		return nil, err
	}
	c := &Containerd{Dir: dir, Socket: filepath.Join(dir, "containerd.sock")}
	c.Endpoint = "unix://" + c.Socket
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Containerd) start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "cni"), 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"config.toml":              fmt.Sprintf(configTemplate, c.Dir, PauseImage),
		"cni/10-loopback.conflist": loopbackCNI,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	var err error
	if c.proc, err = startProcess(c.Dir, "containerd", "containerd", "--config", filepath.Join(c.Dir, "config.toml")); err != nil {
		return err
	}
	if c.conn, err = cri.Dial(c.Endpoint); err != nil {
		return err
	}
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	tarPath := filepath.Join(c.Dir, "pause.tar")
	if err := BuildPauseImage(tarPath); err != nil {
		return err
	}
	return c.ImportImage(ctx, tarPath)
}

// waitReady polls CRI Status until both runtime and network are ready.
func (c *Containerd) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := c.conn.Runtime.Status(callCtx, &runtimeapi.StatusRequest{})
		callCancel()
		if err == nil && allConditionsTrue(resp) {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("runtime not ready: %v", resp.GetStatus().GetConditions())
		}
		select {
		case <-c.proc.exited:
			return fmt.Errorf("containerd exited early: %s", c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("containerd not ready: %w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func allConditionsTrue(resp *runtimeapi.StatusResponse) bool {
	conds := resp.GetStatus().GetConditions()
	for _, cond := range conds {
		if !cond.Status {
			return false
		}
	}
	return len(conds) >= 2
}

// ImportImage imports an OCI layout tarball into the k8s.io namespace.
func (c *Containerd) ImportImage(ctx context.Context, tarPath string) error {
	cmd := exec.CommandContext(ctx, "ctr", "--address", c.Socket, "-n", "k8s.io", "images", "import", tarPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarPath, err, out)
	}
	return nil
}

// Freeze stops containerd with SIGSTOP; its socket stays open and silent.
func (c *Containerd) Freeze() error { return syscall.Kill(c.proc.PID(), syscall.SIGSTOP) }

// Thaw resumes a frozen containerd with SIGCONT.
func (c *Containerd) Thaw() error { return syscall.Kill(c.proc.PID(), syscall.SIGCONT) }

func (c *Containerd) logTail() string { return c.proc.logTail(15) }

// Stop removes every pod through CRI, stops containerd by PID, kills any
// shim it left, unmounts what is left under Dir and removes Dir.
func (c *Containerd) Stop() {
	if c.proc != nil {
		_ = c.Thaw()
		if c.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_ = RemoveAllPods(ctx, c.conn.Runtime)
			cancel()
		}
		c.proc.stop(10 * time.Second)
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	killShims(c.Socket)
	unmountUnder(c.Dir)
	_ = os.RemoveAll(c.Dir)
}

// stopProcess sends SIGTERM, then SIGKILL if pid has not exited in grace.
func stopProcess(pid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-exited
}

// killShims kills the runc shims whose command line names this containerd's
// socket, by PID, in case pod removal did not end them.
func killShims(socket string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "containerd-shim") {
			continue
		}
		if strings.Contains(string(cmdline), socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder lazily unmounts every mount below dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			continue
		}
	}
}

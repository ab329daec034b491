package harness

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// CRIO is a real CRI-O started by the harness as its child, with conmon
// and runc, in a temp dir of its own.
type CRIO struct {
	Dir      string // temp dir holding configuration, storage, state and the socket
	Socket   string
	Endpoint string
	Bin      CRIOBinaries
	proc     *process
	conn     *cri.Conn
	registry *httptest.Server // the harness's images, for CRI-O to pull
	wrapper  string           // the runc wrapper CRI-O runs (buildRuncWrapper)
	sd       *Systemd         // the systemd running CRI-O as unit, when one does
	unit     string
	killMode string // the unit's KillMode=, "" for the shipped unit's
}

// StartCRIO starts the pinned CRI-O in a new temp dir, pulls the pause
// image from a registry of the harness's own on loopback, and waits until
// CRI reports the runtime and network ready.
func StartCRIO(ctx context.Context) (*CRIO, error) {
	bin, err := FindCRIOBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := runtimeDir("hwo-")
	if err != nil {
		return nil, err
	}
	c := &CRIO{Dir: dir, Socket: filepath.Join(dir, "crio.sock"), Bin: bin}
	c.Endpoint = "unix://" + c.Socket
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *CRIO) start(ctx context.Context) error {
	if err := c.prepare(); err != nil {
		return err
	}
	if err := c.launch(ctx); err != nil {
		return err
	}
	return c.pullPause(ctx)
}

// prepare serves the pause image, builds the runc wrapper and writes the
// configuration.
func (c *CRIO) prepare() error {
	c.registry = serveRegistry()
	if err := c.pushPauseImage(); err != nil {
		return err
	}
	var err error
	if c.wrapper, err = buildRuncWrapper(c.Dir, c.Bin.path("runc")); err != nil {
		return err
	}
	return c.writeConfig(c.registry.Listener.Addr().String())
}

// launch starts crio on c.Dir's configuration and state and waits until
// it is ready.
func (c *CRIO) launch(ctx context.Context) error {
	var err error
	if c.proc, err = startProcessEnv(c.Dir, "crio", c.crioEnv(), c.Bin.path("crio"), c.crioArgs()...); err != nil {
		return err
	}
	if c.conn == nil {
		if c.conn, err = cri.Dial(c.Endpoint); err != nil {
			return err
		}
	}
	return waitCRIReady(ctx, c.conn, c, c.logTail)
}

// Runtime is a CRI client on the harness's own connection.
func (c *CRIO) Runtime() runtimeapi.RuntimeServiceClient { return c.conn.Runtime }

// CreatePods runs n host-network pods of perPod containers each.
func (c *CRIO) CreatePods(ctx context.Context, n, perPod int) ([]Pod, error) {
	return createPods(ctx, c.conn.Runtime, c.Dir, n, perPod)
}

// PID is crio's process ID; under systemd, the unit's current main PID on
// the host, or 0 while it has none.
func (c *CRIO) PID() int {
	if c.sd == nil {
		return c.proc.PID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, _ := c.sd.MainPID(ctx, c.unit)
	return pid
}

// Systemd is the systemd running CRI-O, or nil.
func (c *CRIO) Systemd() *Systemd { return c.sd }

// Exited is closed when crio, or the systemd running it, exits.
func (c *CRIO) Exited() <-chan struct{} {
	if c.sd != nil {
		return c.sd.proc.exited
	}
	return c.proc.exited
}

// String names CRI-O in a wait's failure.
func (c *CRIO) String() string { return "crio" }

// Freeze stops crio with SIGSTOP; its socket stays open and silent.
func (c *CRIO) Freeze() error { return signalPID("crio", c.PID(), syscall.SIGSTOP) }

// Thaw resumes a frozen crio.
func (c *CRIO) Thaw() error { return signalPID("crio", c.PID(), syscall.SIGCONT) }

// StopRuntime stops crio alone, as `systemctl stop crio` or a crash
// would: SIGTERM (graceful) or SIGKILL. Its conmons, each in a process
// group of its own, and their containers go on running.
func (c *CRIO) StopRuntime(graceful bool) {
	_ = c.Thaw()
	if c.sd != nil {
		if pid := c.PID(); !graceful && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = c.sd.StopUnit(ctx, c.unit)
		return
	}
	if graceful {
		c.proc.stop(30 * time.Second)
		return
	}
	_ = syscall.Kill(c.proc.PID(), syscall.SIGKILL)
	<-c.proc.exited
}

// StartRuntime starts crio again on the same state and waits until it is
// ready.
func (c *CRIO) StartRuntime(ctx context.Context) error {
	if c.sd != nil {
		if err := c.sd.StartUnit(ctx, c.unit); err != nil {
			return err
		}
		return waitCRIReady(ctx, c.conn, c, c.logTail)
	}
	return c.launch(ctx)
}

func (c *CRIO) logTail() string {
	if c.proc == nil {
		return fileTail("crio", filepath.Join(c.Dir, "crio.log"), 20)
	}
	return c.proc.logTail(20)
}

// Stop removes every pod, stops crio and whatever of its conmons is left,
// unmounts what it mounted in its directory and removes it.
func (c *CRIO) Stop() {
	if c.proc != nil || c.sd != nil {
		_ = c.Thaw()
		if c.conn != nil && (c.sd != nil || c.proc.alive()) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_ = RemoveAllPods(ctx, c.conn.Runtime)
			cancel()
		}
		c.proc.stop(30 * time.Second)
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	if c.sd != nil {
		c.sd.Stop()
	}
	if c.registry != nil {
		c.registry.Close()
	}
	killProcessesNaming("conmon", c.Dir)
	unmountUnder(c.Dir)
	_ = syscall.Unmount(c.Dir, syscall.MNT_DETACH) // makeSharedMount's
	_ = os.RemoveAll(c.Dir)
}

// killProcessesNaming kills, by PID, each process whose command line has
// both words, in case pod removal did not end it.
func killProcessesNaming(command, word string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), command) && strings.Contains(string(cmdline), word) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// buildRuncWrapper builds test/runcwrap around runc into dir and returns
// its path.
func buildRuncWrapper(dir, runc string) (string, error) {
	out := filepath.Join(dir, "runc-wrapper")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.runc="+runc, "-o", out, "./test/runcwrap")
	cmd.Dir = ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the runc wrapper: %w: %s", err, b)
	}
	return out, nil
}

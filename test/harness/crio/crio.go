package crio

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// CRIO is a real CRI-O started by the harness as its child, with conmon
// and runc, in a temp dir of its own.
type CRIO struct {
	Dir      string // temp dir holding configuration, storage, state and the socket
	Socket   string
	Endpoint string
	Bin      Binaries
	systemd.RuntimeProcess
	conn     *cri.Conn
	registry *httptest.Server // the harness's images, for CRI-O to pull
	wrapper  string           // the runc wrapper CRI-O runs (buildRuncWrapper)
	killMode string           // the unit's KillMode=, "" for the shipped unit's
}

// Start starts the pinned CRI-O in a new temp dir, pulls the pause
// image from a registry of the harness's own on loopback, and waits until
// CRI reports the runtime and network ready.
func Start(ctx context.Context) (*CRIO, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := harness.RuntimeDir("hwo-")
	if err != nil {
		return nil, err
	}
	c := newCRIO(dir, bin, "")
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// newCRIO is a CRI-O of bin on dir, its socket there; unit is its
// systemd unit's name, "" when it runs as the harness's child.
func newCRIO(dir string, bin Binaries, unit string) *CRIO {
	c := &CRIO{Dir: dir, Socket: filepath.Join(dir, "crio.sock"), Bin: bin,
		RuntimeProcess: systemd.RuntimeProcess{DaemonName: "crio", Unit: unit}}
	c.Endpoint = "unix://" + c.Socket
	return c
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
	c.conn, err = c.StartChild(ctx, c.Dir, c.crioEnv(), c.Bin.path("crio"), c.crioArgs(), c.Endpoint, c.conn, c.logTail)
	return err
}

// Runtime is a CRI client on the harness's own connection.
func (c *CRIO) Runtime() runtimeapi.RuntimeServiceClient { return c.conn.Runtime }

// CreatePods runs n host-network pods of perPod containers each.
func (c *CRIO) CreatePods(ctx context.Context, n, perPod int) ([]harness.Pod, error) {
	return harness.CreatePodsOn(ctx, c.conn.Runtime, c.Dir, n, perPod)
}

// StartRuntime starts crio again on the same state and waits until it is
// ready.
func (c *CRIO) StartRuntime(ctx context.Context) error {
	if c.UnitSystemd != nil {
		if err := c.UnitSystemd.StartUnit(ctx, c.Unit); err != nil {
			return err
		}
		return harness.WaitCRIReady(ctx, c.conn, c, c.logTail)
	}
	return c.launch(ctx)
}

func (c *CRIO) logTail() string {
	if c.Daemon == nil {
		return harness.FileTail("crio", filepath.Join(c.Dir, "crio.log"), 20)
	}
	return c.Daemon.LogTail(20)
}

// Stop removes every pod, stops crio and whatever of its conmons is left,
// unmounts what it mounted in its directory and removes it.
func (c *CRIO) Stop() {
	if c.Daemon != nil || c.UnitSystemd != nil {
		_ = c.Thaw()
		if c.conn != nil && (c.UnitSystemd != nil || c.Daemon.Alive()) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_ = harness.RemoveAllPods(ctx, c.conn.Runtime)
			cancel()
		}
		c.Daemon.Stop(30 * time.Second)
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	if c.UnitSystemd != nil {
		c.UnitSystemd.Stop()
	}
	if c.registry != nil {
		c.registry.Close()
	}
	harness.KillProcessesNaming("conmon", c.Dir)
	harness.UnmountUnder(c.Dir)
	_ = syscall.Unmount(c.Dir, syscall.MNT_DETACH) // MakeSharedMount's
	_ = os.RemoveAll(c.Dir)
}

// buildRuncWrapper builds test/runcwrap around runc into dir and returns
// its path.
func buildRuncWrapper(dir, runc string) (string, error) {
	out := filepath.Join(dir, "runc-wrapper")
	if err := harness.GoBuild(harness.ModuleRoot(), out, "./test/runcwrap", "-ldflags", "-s -w -X main.runc="+runc); err != nil {
		return "", err
	}
	return out, nil
}

// Where is CRI-O's RuntimePaths.
func (c *CRIO) Where() harness.RuntimePaths {
	return harness.RuntimePaths{Dir: c.Dir, Socket: c.Socket, Endpoint: c.Endpoint, NodeSocketDir: "/run/crio"}
}

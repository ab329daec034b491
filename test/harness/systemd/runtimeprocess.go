package systemd

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/harness"
)

// RuntimeProcess is a runtime's daemon (containerd, crio): the harness's
// child, or the main process of a unit of the harness's systemd. PID,
// Freeze and Thaw follow the unit's main process across restarts.
type RuntimeProcess struct {
	DaemonName  string
	Daemon      *harness.Process // the daemon, when the harness runs it as its child
	UnitSystemd *Systemd         // the systemd running it as unit, when one does
	Unit        string
}

// PID is the daemon's process ID. Under systemd it is the unit's current
// main PID on the host, which changes when systemd restarts it, or 0
// while it has none.
func (r *RuntimeProcess) PID() int {
	if r.UnitSystemd == nil {
		return r.Daemon.PID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, _ := r.UnitSystemd.MainPID(ctx, r.Unit)
	return pid
}

// Systemd is the systemd running the daemon as its unit, or nil when the
// harness runs it as its child.
func (r *RuntimeProcess) Systemd() *Systemd { return r.UnitSystemd }

// Exited is closed when the daemon, or the systemd running it, exits.
func (r *RuntimeProcess) Exited() <-chan struct{} {
	if r.UnitSystemd != nil {
		return r.UnitSystemd.Exited()
	}
	return r.Daemon.Exited()
}

// String names the daemon in a wait's failure.
func (r *RuntimeProcess) String() string { return r.DaemonName }

// Freeze stops the daemon with SIGSTOP; its socket stays open and silent.
func (r *RuntimeProcess) Freeze() error {
	return harness.SignalPID(r.DaemonName, r.PID(), syscall.SIGSTOP)
}

// Thaw resumes a frozen daemon with SIGCONT.
func (r *RuntimeProcess) Thaw() error {
	return harness.SignalPID(r.DaemonName, r.PID(), syscall.SIGCONT)
}

// StopRuntime stops the daemon alone, as `systemctl stop` or a crash
// would: SIGTERM (graceful) or SIGKILL. What it started (shims, conmons)
// and their containers go on running; its socket stays on disk until the
// next start replaces it. Under systemd it stops the unit (after the
// SIGKILL, so that systemd does not restart it).
func (r *RuntimeProcess) StopRuntime(graceful bool) {
	_ = r.Thaw()
	if r.UnitSystemd != nil {
		if pid := r.PID(); !graceful && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = r.UnitSystemd.StopUnit(ctx, r.Unit)
		return
	}
	if graceful {
		r.Daemon.Stop(30 * time.Second)
		return
	}
	_ = syscall.Kill(r.Daemon.PID(), syscall.SIGKILL)
	<-r.Daemon.Exited()
}

// StartChild starts the daemon as the harness's child (bin with args,
// env added, its log in dir), dials endpoint unless conn is already a
// connection to it, and waits until the runtime is ready; it returns the
// connection.
func (r *RuntimeProcess) StartChild(ctx context.Context, dir string, env []string, bin string, args []string,
	endpoint string, conn *cri.Conn, logTail func() string) (*cri.Conn, error) {
	var err error
	if r.Daemon, err = harness.StartProcessEnv(dir, r.DaemonName, env, bin, args...); err != nil {
		return conn, err
	}
	if conn == nil {
		if conn, err = cri.Dial(endpoint); err != nil {
			return nil, err
		}
	}
	return conn, harness.WaitCRIReady(ctx, conn, r, logTail)
}

// StartSystemdUnit starts a systemd whose only unit is the daemon's (unit is
// its text; with cgroups of its own when ownCgroups,
// StartWithOwnCgroups), dials its CRI endpoint and waits until the runtime is ready;
// a failure carries the daemon's and systemd's logs.
func (r *RuntimeProcess) StartSystemdUnit(ctx context.Context, unit, endpoint string, logTail func() string, ownCgroups bool) (*cri.Conn, error) {
	var err error
	if r.UnitSystemd, err = startSystemd(ctx, map[string]string{r.Unit: unit}, ownCgroups); err != nil {
		return nil, err
	}
	conn, err := cri.Dial(endpoint)
	if err != nil {
		return nil, err
	}
	if err := harness.WaitCRIReady(ctx, conn, r, logTail); err != nil {
		return conn, fmt.Errorf("%w\n%s", err, r.UnitSystemd.LogTail(20))
	}
	return conn, nil
}

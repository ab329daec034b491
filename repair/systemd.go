package repair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// Unit is what repair needs to know of a systemd unit.
type Unit struct {
	Name string
	// LoadState is "loaded" for a unit systemd knows.
	LoadState string
	// ActiveState is "active", "activating", "failed"...
	ActiveState string
	// Restart is the service's Restart= setting.
	Restart string
	// MainPID is the main process, in systemd's PID namespace; 0: none.
	MainPID uint32
	// MainStarted is when the main process started
	// (ExecMainStartTimestamp); zero: unknown.
	MainStarted time.Time
	// KillKeepsItDown names the setting under which a SIGKILLed main
	// process stays down or counts as a clean exit
	// (RestartPreventExitStatus= or SuccessExitStatus= naming SIGKILL);
	// empty: none.
	KillKeepsItDown string
	// KillMode is the service's KillMode=: what systemd kills of the unit
	// once its main process is gone ("control-group", "mixed", "process",
	// "none").
	KillMode string
}

// WillRestart tells whether systemd starts the unit again after its main
// process is killed by SIGKILL.
func (u Unit) WillRestart() bool {
	if u.KillKeepsItDown != "" {
		return false
	}
	switch u.Restart {
	case "always", "on-failure", "on-abnormal":
		return true
	}
	return false
}

// Manager is the part of systemd's D-Bus API repair uses.
type Manager interface {
	// UnitOfPID names the unit a process (in systemd's PID namespace)
	// belongs to.
	UnitOfPID(ctx context.Context, pid uint32) (string, error)
	// Unit reads a service unit's settings and state.
	Unit(ctx context.Context, name string) (Unit, error)
	// Processes lists the PIDs (in systemd's PID namespace) of every
	// process in the unit's cgroup and those below it.
	Processes(ctx context.Context, name string) ([]uint32, error)
	// KillMain sends SIGKILL to the unit's main process. An error that
	// wraps ErrKillNotSent says the kill never left: it was not made.
	KillMain(ctx context.Context, name string) error
	Close()
}

// DialSystemd connects to systemd's private socket at path, as root: the
// private socket needs no bus daemon, and systemd answers there only to
// root. ctx bounds the dial; the connection then lives until Close (each
// call has its own context), so a kill's fresh deadline is not cut short
// by the checks' that came before it.
func DialSystemd(ctx context.Context, path string) (Manager, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("systemd's private socket: %w", err)
	}
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, end) // the dial's deadline closes what it opened
	defer stop()
	var sys *godbus.Conn
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial("unix:path="+path, godbus.WithContext(life))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			_ = c.Close()
			return nil, err
		}
		if sys == nil {
			sys = c
		}
		return c, nil
	})
	if err == nil && ctx.Err() != nil {
		conn.Close()
		err = cause(ctx, ctx.Err())
	}
	if err != nil {
		end()
		return nil, fmt.Errorf("systemd's D-Bus API at %s: %w", path, err)
	}
	return &systemd{conn: conn, sys: sys, end: end}, nil
}

type systemd struct {
	conn *sddbus.Conn
	sys  *godbus.Conn // conn's connection for calls, for what go-systemd does not wrap
	end  context.CancelFunc
}

func (s *systemd) Close() {
	s.conn.Close()
	s.end()
}

func (s *systemd) UnitOfPID(ctx context.Context, pid uint32) (string, error) {
	name, err := s.conn.GetUnitNameByPID(ctx, pid)
	if err != nil {
		return "", fmt.Errorf("the unit of PID %d: %w", pid, err)
	}
	return name, nil
}

func (s *systemd) Unit(ctx context.Context, name string) (Unit, error) {
	u := Unit{Name: name}
	props, err := s.conn.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return u, fmt.Errorf("unit %s: %w", name, err)
	}
	u.LoadState, _ = props["LoadState"].(string)
	u.ActiveState, _ = props["ActiveState"].(string)
	if u.LoadState != "loaded" {
		return u, fmt.Errorf("unit %s: %w (load state %q)", name, ErrNoUnit, u.LoadState)
	}
	svc, err := s.conn.GetUnitTypePropertiesContext(ctx, name, "Service")
	if err != nil {
		return u, fmt.Errorf("unit %s: service properties: %w", name, err)
	}
	u.Restart, _ = svc["Restart"].(string)
	u.KillMode, _ = svc["KillMode"].(string)
	u.MainPID, _ = svc["MainPID"].(uint32)
	u.MainStarted = mainStarted(svc)
	for _, name := range []string{"RestartPreventExitStatus", "SuccessExitStatus"} {
		if slices.Contains(exitSignals(svc[name]), int32(syscall.SIGKILL)) {
			u.KillKeepsItDown = name + "=SIGKILL"
		}
	}
	return u, nil
}

// mainStarted is when the main process started, placed on this
// process's monotonic clock from systemd's CLOCK_MONOTONIC stamp
// (ExecMainStartTimestampMonotonic), so a step of the wall clock makes
// it neither young nor old; systemd's wall stamp where that cannot be
// read. Zero: unknown.
func mainStarted(svc map[string]any) time.Time {
	var ts unix.Timespec
	mono, _ := svc["ExecMainStartTimestampMonotonic"].(uint64)
	if mono > 0 && unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		return time.Now().Add(-(time.Duration(ts.Nano()) - time.Duration(mono)*time.Microsecond))
	}
	if usec, _ := svc["ExecMainStartTimestamp"].(uint64); usec > 0 {
		return time.UnixMicro(int64(usec))
	}
	return time.Time{}
}

// exitSignals are the signals of an exit status list property, D-Bus type
// (aiai): the exit codes, then the signals.
func exitSignals(v any) []int32 {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return nil
	}
	sigs, _ := pair[1].([]int32)
	return sigs
}

// unitProcess is an entry of GetUnitProcesses, D-Bus type (sus).
type unitProcess struct {
	Cgroup  string
	PID     uint32
	Command string
}

func (s *systemd) Processes(ctx context.Context, name string) ([]uint32, error) {
	var procs []unitProcess
	err := s.sys.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		CallWithContext(ctx, "org.freedesktop.systemd1.Manager.GetUnitProcesses", 0, name).Store(&procs)
	if err != nil {
		return nil, fmt.Errorf("the processes of unit %s: %w", name, cause(ctx, err))
	}
	pids := make([]uint32, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, p.PID)
	}
	return pids, nil
}

func (s *systemd) KillMain(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kill the main process of %s: %w: %w", name, ErrKillNotSent, cause(ctx, err))
	}
	if !s.conn.Connected() {
		return fmt.Errorf("kill the main process of %s: %w: the connection to systemd is closed", name, ErrKillNotSent)
	}
	if err := s.conn.KillUnitWithTarget(ctx, name, sddbus.Main, int32(syscall.SIGKILL)); err != nil {
		return fmt.Errorf("kill the main process of %s: %w", name, cause(ctx, err))
	}
	return nil
}

// ErrKillNotSent is a kill that never reached systemd: it was not made,
// and does not count against the budget.
var ErrKillNotSent = errors.New("the kill was never sent")

// ErrNoUnit is a unit systemd does not have.
var ErrNoUnit = errors.New("no such unit")

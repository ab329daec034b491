package systemd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// MainPID is unit's main process as a host PID (systemd's MainPID is a PID
// in its namespace), or 0 when the unit has none.
func (s *Systemd) MainPID(ctx context.Context, unit string) (int, error) {
	return s.pidProperty(ctx, unit, "MainPID")
}

// ControlPID is the host PID of unit's control process (an ExecStartPre,
// say), or 0 when it runs none.
func (s *Systemd) ControlPID(ctx context.Context, unit string) (int, error) {
	return s.pidProperty(ctx, unit, "ControlPID")
}

func (s *Systemd) pidProperty(ctx context.Context, unit, name string) (int, error) {
	prop, err := s.conn.GetServicePropertyContext(ctx, unit, name)
	if err != nil {
		return 0, fmt.Errorf("%s of %s: %w", name, unit, err)
	}
	nsPID, ok := prop.Value.Value().(uint32)
	if !ok {
		return 0, fmt.Errorf("%s of %s is %v", name, unit, prop.Value)
	}
	if nsPID == 0 {
		return 0, nil
	}
	return s.HostPID(int(nsPID))
}

// MainStartedAt is when unit's main process started, by systemd's
// ExecMainStartTimestamp (this machine's clock).
func (s *Systemd) MainStartedAt(ctx context.Context, unit string) (time.Time, error) {
	prop, err := s.conn.GetServicePropertyContext(ctx, unit, "ExecMainStartTimestamp")
	if err != nil {
		return time.Time{}, fmt.Errorf("ExecMainStartTimestamp of %s: %w", unit, err)
	}
	us, ok := prop.Value.Value().(uint64)
	if !ok || us == 0 {
		return time.Time{}, fmt.Errorf("ExecMainStartTimestamp of %s is %v", unit, prop.Value)
	}
	return time.UnixMicro(int64(us)), nil
}

// ActiveState is unit's ActiveState (active, activating, failed, ...).
func (s *Systemd) ActiveState(ctx context.Context, unit string) (string, error) {
	prop, err := s.conn.GetUnitPropertyContext(ctx, unit, "ActiveState")
	if err != nil {
		return "", fmt.Errorf("ActiveState of %s: %w", unit, err)
	}
	state, _ := prop.Value.Value().(string)
	return state, nil
}

// WaitActive polls until unit is active (for Type=notify, its main process
// said READY=1), and fails when it is failed. Right after its main process
// is killed a unit is still active for a moment, until systemd reaps it:
// wait for WaitMainPIDChange first.
func (s *Systemd) WaitActive(ctx context.Context, unit string) error {
	return s.poll(ctx, func(ctx context.Context) (bool, error) {
		state, err := s.ActiveState(ctx, unit)
		if err != nil {
			return false, err
		}
		if state == "failed" {
			return false, fmt.Errorf("%s failed\n%s", unit, s.LogTail(20))
		}
		return state == "active", nil
	}, func() string { return unit + " not active" })
}

// WaitMainPIDChange polls until unit has a main process other than the
// host PID old, and returns its host PID. The new process may not be ready
// yet: WaitActive waits for that.
func (s *Systemd) WaitMainPIDChange(ctx context.Context, unit string, old int) (int, error) {
	var pid int
	var last error
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		// A main PID that has just exited does not translate: poll on.
		pid, last = s.MainPID(ctx, unit)
		return last == nil && pid != 0 && pid != old, nil
	}, func() string { return fmt.Sprintf("main PID of %s still %d (last: %v)", unit, old, last) })
	return pid, err
}

// StartUnit starts unit and waits for the job's result.
func (s *Systemd) StartUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "start", unit, s.conn.StartUnitContext)
}

// StopUnit stops unit and waits for the job's result.
func (s *Systemd) StopUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "stop", unit, s.conn.StopUnitContext)
}

// RestartUnit restarts unit and waits for the job's result.
func (s *Systemd) RestartUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "restart", unit, s.conn.RestartUnitContext)
}

func (s *Systemd) job(ctx context.Context, what, unit string, enqueue func(context.Context, string, string, chan<- string) (int, error)) error {
	done := make(chan string, 1)
	if _, err := enqueue(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", what, unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s %s: job %s\n%s", what, unit, result, s.LogTail(20))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w\n%s", what, unit, ctx.Err(), s.LogTail(20))
	}
}

// SetUnit writes unit (a new one or a new version) and has systemd reload
// its units, as `systemctl daemon-reload` does.
func (s *Systemd) SetUnit(ctx context.Context, name, content string) error {
	if err := writeUnit(filepath.Join(s.Dir, "units"), name, content); err != nil {
		return err
	}
	if err := s.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reload systemd's units: %w", err)
	}
	return nil
}

// writeUnit writes unit name into dir with a drop-in setting
// DefaultDependencies=no.
func writeUnit(dir, name, content string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("bad unit name %q", name)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		return err
	}
	dropIn := filepath.Join(dir, name+".d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dropIn, "10-hangwatch-harness.conf"), []byte("[Unit]\nDefaultDependencies=no\n"), 0o644)
}

// poll calls check until it is done or fails, systemd exits or ctx ends
// (at most five minutes); what says what is awaited.
func (s *Systemd) poll(ctx context.Context, check func(context.Context) (bool, error), what func() string) error {
	var checkErr error
	_, err := harness.Poll(ctx, 5*time.Minute, "systemd", func() bool {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var done bool
		done, checkErr = check(callCtx)
		return done || checkErr != nil
	}, harness.UnlessExited(s.proc), harness.Explaining(func() string { return what() + "\n" + s.LogTail(20) }))
	if checkErr != nil {
		return checkErr
	}
	return err
}

// RemoveDropIn removes unit's drop-in name and has systemd reload.
func (s *Systemd) RemoveDropIn(ctx context.Context, unit, name string) error {
	if err := os.Remove(filepath.Join(s.Dir, "units", unit+".d", name)); err != nil {
		return err
	}
	return s.conn.ReloadContext(ctx)
}

// SetDropIn writes a drop-in, name, for unit and has systemd reload its
// units: it applies from the unit's next start.
func (s *Systemd) SetDropIn(ctx context.Context, unit, name, content string) error {
	dir := filepath.Join(s.Dir, "units", unit+".d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		return err
	}
	if err := s.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reload systemd's units: %w", err)
	}
	return nil
}

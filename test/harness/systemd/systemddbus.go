package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/hangwatch/hangwatch/test/harness"
)

// socketProxyBinary is systemd's socket proxy, which relays the test's
// D-Bus connections to systemd's private socket (see Socket).
const socketProxyBinary = "/lib/systemd/systemd-socket-proxyd"

// The socket proxy's units: systemd listens on Dir/private.sock for it and
// starts the proxy on the first connection.
const (
	proxySocketUnit  = "hangwatch-harness-private.socket"
	proxyServiceUnit = "hangwatch-harness-private.service"
)

// waitReady waits until systemd's private socket answers and its first
// transaction is done (at most two minutes).
func (s *Systemd) waitReady(ctx context.Context) error {
	var last error
	_, err := harness.Poll(ctx, 2*time.Minute, "systemd ready", func() bool {
		last = s.tryReady(ctx)
		return last == nil
	}, harness.Every(20*time.Millisecond), harness.UnlessExited(s.proc), harness.Explaining(func() string {
		return fmt.Sprintf("last: %v\n%s\n%s", last, s.proc.LogTail(10), s.LogTail(20))
	}))
	return err
}

func (s *Systemd) tryReady(ctx context.Context) error {
	if s.pid == 0 {
		pid := childOf(s.proc.PID())
		if pid == 0 {
			return errors.New("unshare has not forked yet")
		}
		nspid, err := nsPIDs(pid)
		if err != nil {
			return err
		}
		s.pid, s.level = pid, len(nspid)-1
	}
	if s.conn == nil {
		if _, err := os.Stat(s.Socket()); err != nil {
			return err
		}
		dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := Dial(dialCtx, s.Socket())
		cancel()
		if err != nil {
			return err
		}
		s.conn = conn
	}
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.conn.SystemStateContext(callCtx)
	if err != nil {
		return fmt.Errorf("SystemState: %w", err)
	}
	if state, _ := st.Value.Value().(string); state == "initializing" || state == "starting" {
		return fmt.Errorf("system state %s", state)
	}
	return nil
}

// Dial connects to a systemd's private D-Bus socket (no bus daemon:
// EXTERNAL auth as this user, no Hello). ctx bounds the dial and the auth
// only.
func Dial(ctx context.Context, socket string) (*sddbus.Conn, error) {
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial("unix:path=" + socket)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		err = c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))})
		if !stop() {
			return nil, fmt.Errorf("auth on %s: %w", socket, ctx.Err())
		}
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("auth on %s: %w", socket, err)
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("connect to systemd at %s: %w", socket, err)
	}
	return conn, nil
}

// Socket is the path on the host of a socket relayed to systemd's private
// D-Bus socket, /run/systemd/private, which refuses the test's own
// connections (see Systemd). Talk to it as to the private socket: no bus
// daemon, EXTERNAL auth, no Hello (Dial).
func (s *Systemd) Socket() string { return filepath.Join(s.Dir, "private.sock") }

// Conn is the harness's own D-Bus connection to systemd.
func (s *Systemd) Conn() *sddbus.Conn { return s.conn }

// Package stuckdir holds a process in uninterruptible sleep (D) for the
// tests: a FUSE file system, served by the test binary itself, whose mkdir
// never answers. It is a part of the harness of its own: it uses
// test/harness's process and poller, and nothing of the harness uses it.
package stuckdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/hangwatch/hangwatch/test/harness"
)

// Dir is a FUSE file system, served by this process, whose mkdir never
// answers until Release: a first mkdir in it waits for the answer in S
// (interruptible), and a second one waits for the directory's inode lock,
// which the first holds, in D (uninterruptible sleep). It needs root and
// /dev/fuse, but no fusermount.
type Dir struct {
	dir, mnt string
	server   *fuse.Server
	root     *stuckRoot
	conn     uint32        // FUSE connection ID, for an abort
	release  chan struct{} // closed by Answer or Release: Mkdir answers EIO
	answer   sync.Once

	mu       sync.Mutex
	procs    []*harness.Process
	released bool
	once     sync.Once
}

// errReleased is returned by a StuckDir used after Release.
var errReleased = errors.New("stuck dir released")

// New mounts the file system on a new temp dir and returns when it
// answers; Release unmounts it.
func New(ctx context.Context) (*Dir, error) {
	dir, err := os.MkdirTemp("", "hangwatch-stuckdir-")
	if err != nil {
		return nil, err
	}
	s := &Dir{dir: dir, mnt: filepath.Join(dir, "mnt"), release: make(chan struct{})}
	s.root = &stuckRoot{release: s.release, received: make(chan struct{})}
	if err := os.Mkdir(s.mnt, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if s.server, err = mountStuck(s.mnt, s.root); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.waitAnswers(ctx); err != nil {
		s.Release()
		return nil, err
	}
	return s, nil
}

// waitAnswers polls until the mount point is the FUSE file system and
// answers a stat, keeping its connection ID.
func (s *Dir) waitAnswers(ctx context.Context) error {
	var last error
	_, err := harness.Poll(ctx, time.Minute, "FUSE on "+s.mnt+" to answer", func() bool {
		s.conn, last = fuseConnID(s.mnt)
		return last == nil
	}, harness.Every(10*time.Millisecond), harness.Explaining(func() string { return fmt.Sprint(last) }))
	return err
}

// Path is the mount point.
func (s *Dir) Path() string { return s.mnt }

// MkdirTarget is a path in the mount whose mkdir hangs until Release.
func (s *Dir) MkdirTarget() string { return filepath.Join(s.mnt, "stuck") }

// MkdirCommand is a command line that hangs in mkdir(2) on MkdirTarget: the
// first one started waits in S, any later one in D. For callers that start
// the processes themselves (as a systemd unit's ExecStart, say), with
// WaitRequest between the first and the second.
func (s *Dir) MkdirCommand() []string { return []string{"/bin/mkdir", s.MkdirTarget()} }

// WaitRequest waits until the file system has received a first Mkdir
// request, that is until a first mkdir holds the directory's lock.
func (s *Dir) WaitRequest(ctx context.Context) error {
	return s.waitRequest(ctx, nil)
}

// waitRequest is WaitRequest, failing early if first exits.
func (s *Dir) waitRequest(ctx context.Context, first *harness.Process) error {
	var exited <-chan struct{}
	if first != nil {
		exited = first.Exited()
	}
	select {
	case <-s.root.received:
		return nil
	case <-s.release:
		return errReleased
	case <-exited:
		return fmt.Errorf("first mkdir exited before its request reached FUSE: %s", first.LogTail(5))
	case <-ctx.Done():
		return fmt.Errorf("no Mkdir request on %s: %w", s.mnt, ctx.Err())
	}
}

// requireFUSE skips a test that needs root and /dev/fuse when either is
// missing.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("StuckDir needs root (it mounts FUSE with mount(2)); run as root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("StuckDir needs /dev/fuse: %v", err)
	}
}

package stuckdir

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangwatch/hangwatch/test/harness"
)

// Release lets the file system answer, ends the mkdir processes HoldInD
// started and reaps them, unmounts and removes the temp dir. If the mount
// does not go away, it aborts the FUSE connection and detaches the mount.
// It can be called more than once; processes a caller started from
// MkdirCommand fail with EIO (or ENOTCONN) and are the caller's to reap.
func (s *Dir) Release() {
	s.once.Do(s.release1)
}

// Answer lets every held Mkdir, and every later one, fail with EIO, so
// the processes in S and D go on, and leaves the file system mounted. A
// test whose mount was copied into another mount namespace (a systemd
// started after NewStuckDir) answers first and releases once that
// namespace is gone: until then the copy keeps the connection, and an
// unmount here waits for it.
func (s *Dir) Answer() { s.answer.Do(func() { close(s.release) }) }

// release1 is Release's one run.
func (s *Dir) release1() {
	s.Answer()
	s.mu.Lock()
	s.released = true
	procs := append([]*harness.Process(nil), s.procs...)
	s.mu.Unlock()

	// Answered (EIO), the first mkdir exits, which unlocks the directory;
	// the second's Mkdir request is then answered at once.
	clean := waitExited(procs, 5*time.Second)
	if clean {
		clean = s.unmountWithin(5 * time.Second)
	}
	if !clean {
		s.forceUnmount()
	}
	for _, p := range procs {
		p.Stop(time.Second) // by PID; a no-op for one already reaped
	}
	if still, err := mounted(s.mnt); err == nil && !still {
		_ = os.RemoveAll(s.dir)
	}
}

// forceUnmount aborts the FUSE connection (failing whatever waits on it),
// kills the StuckDir's processes, detaches the mount and waits (10s at
// most) for the server to end.
func (s *Dir) forceUnmount() {
	if s.conn != 0 {
		_ = abortFuseConn(s.conn, filepath.Join(s.dir, "fusectl"))
	}
	s.mu.Lock()
	for _, p := range s.procs {
		if p.Alive() {
			_ = syscall.Kill(p.PID(), syscall.SIGKILL)
		}
	}
	s.mu.Unlock()
	if still, err := mounted(s.mnt); err != nil || still {
		_ = unix.Unmount(s.mnt, unix.MNT_DETACH)
	}
	done := make(chan struct{})
	go func() { s.server.Wait(); close(done) }()
	select { // bounded, should the abort have failed
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// unmountWithin unmounts through the server, giving up after d: a copy of
// the mount in another namespace keeps the connection open, and the
// server's Unmount waits for its readers until the connection ends.
func (s *Dir) unmountWithin(d time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- s.server.Unmount() }()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(d):
		return false
	}
}

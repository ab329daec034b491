package stuckdir

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// HoldInD starts a first mkdir in the file system and waits until the
// server has its request, then starts a second one and waits until it is in
// state D, blocked on the directory's inode lock; it returns the second's
// PID. Both processes are the StuckDir's: Release ends and reaps them.
// HoldInD can be called once.
func (s *Dir) HoldInD(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return 0, errReleased
	}
	if len(s.procs) > 0 {
		return 0, errors.New("HoldInD called twice on a StuckDir")
	}
	first, err := s.startMkdirLocked("mkdir-1")
	if err != nil {
		return 0, err
	}
	if err := s.waitRequest(ctx, first); err != nil {
		return 0, err
	}
	second, err := s.startMkdirLocked("mkdir-2")
	if err != nil {
		return 0, err
	}
	if err := harness.WaitProcState(ctx, second.PID(), 'D'); err != nil {
		return 0, fmt.Errorf("second mkdir not in D: %w", err)
	}
	return second.PID(), nil
}

// startMkdirLocked starts MkdirCommand as a process of the StuckDir's,
// its output in the temp dir. s.mu is held.
func (s *Dir) startMkdirLocked(name string) (*harness.Process, error) {
	argv := s.MkdirCommand()
	p, err := harness.StartProcess(s.dir, name, argv[0], argv[1:]...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// pids are the PIDs of the processes HoldInD started, first to last.
func (s *Dir) pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := make([]int, 0, len(s.procs))
	for _, p := range s.procs {
		pids = append(pids, p.PID())
	}
	return pids
}

// waitExited waits until every process has exited or d has passed, and
// tells whether they all have.
func waitExited(procs []*harness.Process, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, p := range procs {
		select {
		case <-p.Exited():
		case <-timer.C:
			return false
		}
	}
	return true
}

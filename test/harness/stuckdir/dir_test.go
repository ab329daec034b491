package stuckdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

func TestStuckDirHoldsAProcessInD(t *testing.T) {
	RequireFUSE(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	t.Logf("mounted on %s in %v", s.Path(), time.Since(start))
	if up, err := mounted(s.Path()); err != nil || !up {
		t.Fatalf("%s not in mountinfo (%v)", s.Path(), err)
	}
	start = time.Now()
	pid, err := s.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mkdir %d in D after %v", pid, time.Since(start))
	pids := s.pids()
	if len(pids) != 2 || pids[1] != pid {
		t.Fatalf("processes %v, want 2 ending with %d", pids, pid)
	}
	assertState(t, pid, 'D')
	assertState(t, pids[0], 'S')
	assertNoFuseFD(t, pids[0])

	start = time.Now()
	s.Release()
	t.Logf("released in %v", time.Since(start))
	for _, p := range pids {
		if state, err := harness.ProcState(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("process %d still there after Release (state %c, %v)", p, state, err)
		}
	}
	if up, err := mounted(s.Path()); err != nil || up {
		t.Errorf("%s still mounted after Release (%v)", s.Path(), err)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s not removed: %v", s.dir, err)
	}
	s.Release() // idempotent
}

func TestStuckDirAbortEndsTheHold(t *testing.T) {
	RequireFUSE(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	if _, err := s.HoldInD(ctx); err != nil {
		t.Fatal(err)
	}
	// Release's last resort, without letting Mkdir answer first.
	if err := abortFuseConn(s.conn, s.dir+"/fusectl"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	procs := append([]*harness.Process(nil), s.procs...)
	s.mu.Unlock()
	if !waitExited(procs, 10*time.Second) {
		t.Fatalf("mkdir processes still there after the abort: %v", s.pids())
	}
	if up, err := mounted(s.dir + "/fusectl"); err != nil || up {
		t.Errorf("fusectl left mounted (%v)", err)
	}
	s.Release()
	if up, err := mounted(s.Path()); err != nil || up {
		t.Errorf("%s still mounted after Release (%v)", s.Path(), err)
	}
}

// assertState fails t unless process pid is in state want.
func assertState(t *testing.T, pid int, want byte) {
	t.Helper()
	if state, err := harness.ProcState(pid); err != nil || state != want {
		t.Errorf("process %d state %c (%v), want %c", pid, state, err, want)
	}
}

// assertNoFuseFD fails t if process pid inherited a /dev/fuse fd.
func assertNoFuseFD(t *testing.T, pid int) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("read %s: %v", dir, err)
		return
	}
	for _, e := range entries {
		if target, _ := os.Readlink(dir + "/" + e.Name()); target == "/dev/fuse" {
			t.Errorf("process %d holds /dev/fuse as fd %s", pid, e.Name())
		}
	}
}

package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
)

// recorder is a Watcher's Apply and Refused: content "bad" is refused.
type recorder struct {
	mu               sync.Mutex
	applied, refused []string
}

func (r *recorder) apply(raw []byte) error {
	if string(raw) == "bad" {
		return errors.New("bad content")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, string(raw))
	return nil
}

func (r *recorder) refuse(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, err.Error())
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied), len(r.refused)
}

func watcherOn(t *testing.T, content string) (*Watcher, *recorder, func(string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(content)
	r := &recorder{}
	w := &Watcher{Path: path, Poll: time.Second, Clock: testclock.NewFakeClock(time.Now()), Apply: r.apply, Refused: r.refuse}
	w.Running([]byte(content))
	return w, r, write
}

// TestOnlyAChangeIsApplied: the running content is not applied again; a
// change is, once.
func TestOnlyAChangeIsApplied(t *testing.T) {
	w, r, write := watcherOn(t, "a")
	w.Check(false)
	write("b")
	w.Check(false)
	w.Check(false)
	if a, f := r.counts(); a != 1 || f != 0 || r.applied[0] != "b" {
		t.Fatalf("applied %q, refused %q", r.applied, r.refused)
	}
}

// TestABadChangeIsRefusedOnceWhenItSettles: bad content read once may be
// half-written: refused only when read again the same, then not again
// until it changes; the running content stays.
func TestABadChangeIsRefusedOnceWhenItSettles(t *testing.T) {
	w, r, write := watcherOn(t, "a")
	write("bad")
	w.Check(false)
	if _, f := r.counts(); f != 0 {
		t.Fatalf("refused at the first read: %q", r.refused)
	}
	w.Check(false)
	w.Check(false)
	if a, f := r.counts(); a != 0 || f != 1 {
		t.Fatalf("applied %q, refused %q; want one refusal", r.applied, r.refused)
	}
	write("c")
	w.Check(false)
	if a, _ := r.counts(); a != 1 {
		t.Fatalf("applied %q after a good change", r.applied)
	}
}

// TestAForcedReadAppliesOrRefusesAtOnce: forced, the same content is
// applied again, bad content refused at once, and a file that cannot be
// read refused; polled, an unreadable file is only read again later.
func TestAForcedReadAppliesOrRefusesAtOnce(t *testing.T) {
	w, r, write := watcherOn(t, "a")
	w.Check(true)
	write("bad")
	w.Check(true)
	if a, f := r.counts(); a != 1 || f != 1 {
		t.Fatalf("applied %q, refused %q", r.applied, r.refused)
	}
	if err := os.Remove(w.Path); err != nil {
		t.Fatal(err)
	}
	w.Check(false)
	if _, f := r.counts(); f != 1 {
		t.Fatalf("a poll of a missing file refused: %q", r.refused)
	}
	w.Check(true)
	if _, f := r.counts(); f != 2 {
		t.Fatalf("a forced read of a missing file: %q", r.refused)
	}
}

// TestRunPollsAndHearsTheSignal: Run reads at each tick of its clock, and
// at once on a signal, until its context ends.
func TestRunPollsAndHearsTheSignal(t *testing.T) {
	w, r, write := watcherOn(t, "a")
	clk := w.Clock.(*testclock.FakeClock)
	sig := make(chan os.Signal, 1)
	forced := make(chan struct{}, 1)
	w.Signal, w.Forced = sig, func() { forced <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	write("b")
	clocktest.AwaitWaiters(t, clk, 1) // Run's ticker is made
	clk.Step(time.Second)             // the tick waits in the ticker's channel until Run takes it
	clocktest.Await(t, "the change applied", func() bool { a, _ := r.counts(); return a == 1 })
	sig <- os.Interrupt
	<-forced
	clocktest.Await(t, "the forced apply", func() bool { a, _ := r.counts(); return a == 2 })
	cancel()
	<-done
}

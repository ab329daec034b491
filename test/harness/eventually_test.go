package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// exitedProc is a Watched that has already exited.
type exitedProc struct{ done chan struct{} }

func newExitedProc() exitedProc {
	p := exitedProc{done: make(chan struct{})}
	close(p.done)
	return p
}

func (p exitedProc) Exited() <-chan struct{} { return p.done }
func (p exitedProc) String() string          { return "fake (exit status 3)" }

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	took, err := Poll(context.Background(), time.Second, "the third call", func() bool { calls++; return calls == 3 }, Every(time.Millisecond))
	if err != nil || calls != 3 || took > time.Second {
		t.Fatalf("Poll = %v, %v after %d calls; want nil after 3", took, err, calls)
	}
}

func TestPollGivesUpAtTheLimitNamingTheWait(t *testing.T) {
	_, err := Poll(context.Background(), 20*time.Millisecond, "nothing", func() bool { return false },
		Every(time.Millisecond), Explaining(func() string { return "still nothing" }))
	if err == nil || !strings.Contains(err.Error(), "gave up after 20ms waiting for nothing: still nothing") {
		t.Fatalf("Poll = %v", err)
	}
}

func TestPollEndsWhenAWatchedProcessExits(t *testing.T) {
	start := time.Now()
	_, err := Poll(context.Background(), time.Minute, "nothing", func() bool { return false }, UnlessExited(newExitedProc()))
	if err == nil || !strings.Contains(err.Error(), "fake (exit status 3) exited after") || time.Since(start) > 10*time.Second {
		t.Fatalf("Poll = %v after %v", err, time.Since(start))
	}
}

func TestPollEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Poll(ctx, time.Minute, "nothing", func() bool { return false }); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Poll = %v", err)
	}
}

func TestThroughoutChecksForTheWholeSpan(t *testing.T) {
	calls := 0
	Throughout(t, 20*time.Millisecond, "always", func() bool { calls++; return true }, Every(time.Millisecond))
	if calls < 2 {
		t.Fatalf("cond called %d times over 20ms at 1ms", calls)
	}
}

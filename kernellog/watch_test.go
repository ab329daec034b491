package kernellog

import (
	"context"
	"syscall"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/clocktest"
)

var kernelT0 = time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)

// fakeSource is a kernel log that has nothing to read; Follow returns
// followErr at once, or blocks until ctx ends.
type fakeSource struct {
	followErr error
	followed  chan struct{}
}

func (f *fakeSource) ReadAvailable(func(Record)) error { return nil }
func (f *fakeSource) Stats() KmsgStats                 { return KmsgStats{} }
func (f *fakeSource) Close() error                     { return nil }
func (f *fakeSource) Follow(ctx context.Context, _ time.Duration, _ func(Record), _ func()) error {
	if f.followed != nil {
		f.followed <- struct{}{}
	}
	if f.followErr != nil {
		return f.followErr
	}
	<-ctx.Done()
	return nil
}

// newKernelFixture wires the built-in kernel rules into the built-in
// condition rules as the agent does.
func newKernelFixture(t *testing.T) (*Watch, *conditions.Engine, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(kernelT0)
	w, err := NewWatch([]*RuleSet{DefaultRuleSet()}, WatchOptions{Metrics: NewMetrics(metrics.NewKubeRegistry()), Clock: clk,
		Open: func(time.Duration) (Source, error) { return &fakeSource{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Open(); err != nil {
		t.Fatal(err)
	}
	engine, err := conditions.NewEngine(conditions.DefaultSpecs(), clk, conditions.EngineOptions{
		Available: []string{"kernel"}, RestoredHold: w.RestoredHolds()})
	if err != nil {
		t.Fatal(err)
	}
	w.emit = engine.Observe
	return w, engine, clk
}

func kernelDeadlock(t *testing.T, e *conditions.Engine) conditions.Condition {
	t.Helper()
	for _, c := range e.Set().Snapshot() {
		if c.Type == conditions.TypeKernelDeadlock {
			return c
		}
	}
	t.Fatal("no KernelDeadlock")
	return conditions.Condition{}
}

// TestRestoredKernelDeadlockClearsAfterTheQuietWindow replays the order of
// a restart: the lookback (which no longer holds the line) is read first,
// then the Node's KernelDeadlock=True is read back. It must clear once the
// rule's quiet window (15m) has passed since the restore, and not before.
func TestRestoredKernelDeadlockClearsAfterTheQuietWindow(t *testing.T) {
	k, e, clk := newKernelFixture(t)
	k.send()
	if c := kernelDeadlock(t, e); c.Status != conditions.StatusFalse {
		t.Fatalf("after the lookback: %+v", c)
	}
	raised := kernelT0.Add(-time.Hour)
	took := e.Set().Restore([]conditions.Condition{{Type: conditions.TypeKernelDeadlock, Status: conditions.StatusTrue,
		Reason: "ContainerRuntimeTaskBlocked", Message: "task containerd:1 blocked", LastTransitionTime: raised}}, clk.Now())
	if len(took) != 1 {
		t.Fatalf("restore took %v", took)
	}
	for elapsed := time.Duration(0); elapsed < 15*time.Minute; elapsed += 10 * time.Second {
		k.tick()
		if c := kernelDeadlock(t, e); c.Status != conditions.StatusTrue || !c.LastTransitionTime.Equal(raised) {
			t.Fatalf("%v after the restore, within the quiet window: %+v", elapsed, c)
		}
		clk.Step(10 * time.Second)
	}
	k.tick()
	if c := kernelDeadlock(t, e); c.Status != conditions.StatusFalse || c.Reason != "KernelHasNoDeadlock" {
		t.Fatalf("15m after the restore: %+v, want False", c)
	}
}

// TestRestoredKernelDeadlockSeenAgainFollowsTheKernel: once the line is seen
// again, the kernel rules decide, and their quiet window runs from the line.
func TestRestoredKernelDeadlockSeenAgainFollowsTheKernel(t *testing.T) {
	k, e, clk := newKernelFixture(t)
	k.send()
	e.Set().Restore([]conditions.Condition{{Type: conditions.TypeKernelDeadlock, Status: conditions.StatusTrue,
		Reason: "ContainerRuntimeTaskBlocked", Message: "old"}}, clk.Now())
	clk.Step(10 * time.Minute)
	k.handle(Record{Time: clk.Now(), Message: "INFO: task containerd:7 blocked for more than 120 seconds."})
	clk.Step(14 * time.Minute) // 24m after the restore, 14m after the line
	k.tick()
	if c := kernelDeadlock(t, e); c.Status != conditions.StatusTrue {
		t.Fatalf("14m after a new line: %+v", c)
	}
	clk.Step(time.Minute)
	k.tick()
	if c := kernelDeadlock(t, e); c.Status != conditions.StatusFalse {
		t.Fatalf("15m after the new line: %+v", c)
	}
}

// TestFailedKernelLogReopensWithBackoffAndFailsHealthz: a read error closes
// the log; it is opened again after 1s, 2s, 4s ... up to 30s, and /healthz
// fails once it has been down for over a minute, until it works again.
func TestFailedKernelLogReopensWithBackoffAndFailsHealthz(t *testing.T) {
	k, _, clk := newKernelFixture(t)
	k.src = &fakeSource{followErr: syscall.EIO}
	k.lookback, k.lastRead = 5*time.Minute, clk.Now()
	opens := make(chan time.Duration)
	fails := 6
	reopened := &fakeSource{followed: make(chan struct{}, 1)}
	k.open = func(lookback time.Duration) (Source, error) {
		opens <- lookback
		if fails > 0 {
			fails--
			return nil, syscall.EACCES
		}
		return reopened, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.follow(ctx) }()
	var elapsed time.Duration
	for i, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		clocktest.AwaitWaiters(t, clk, 1) // the watch waits for its next try
		if err := k.Check(); (elapsed > time.Minute) != (err != nil) {
			t.Fatalf("down for %v: /healthz says %v", elapsed, err)
		}
		clk.Step(delay - time.Millisecond)
		select {
		case <-opens:
			t.Fatalf("try %d came before %v", i, delay)
		default:
		}
		clk.Step(time.Millisecond)
		elapsed += delay
		if lookback := <-opens; i == 0 && lookback != time.Second {
			t.Fatalf("first reopen looks back %v, want to the last good read, 1s ago", lookback)
		}
	}
	<-reopened.followed
	if err := k.Check(); err != nil {
		t.Fatalf("after the reopen: %v", err)
	}
	cancel()
	<-done
}

// TestInputBesideNewLines reads the whole input, as the agent does at
// start, while lines arrive: the monitor calls back into the watch under
// its lock, so reading the input must not wait on the watch while it
// holds the monitor's (an earlier kernelWatch did, and two goroutines
// could wait on each other). The last state told is the monitor's.
func TestInputBesideNewLines(t *testing.T) {
	k, e, clk := newKernelFixture(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			k.handle(Record{Time: clk.Now(), Message: "INFO: task containerd:7 blocked for more than 120 seconds."})
		}
	}()
	for i := 0; i < 500; i++ {
		e.Observe(k.Input())
	}
	<-done
	k.send()
	if c := kernelDeadlock(t, e); c.Status != conditions.StatusTrue {
		t.Fatalf("after the lines: %+v", c)
	}
}

package cri

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/critest"
)

// countingObserver counts probe reports so a test knows when fast calls
// have been reported.
type countingObserver struct{ probes, completions atomic.Int64 }

func (o *countingObserver) ObserveProbe(CallResult)      { o.probes.Add(1) }
func (o *countingObserver) ObserveCompletion(CallResult) { o.completions.Add(1) }
func (o *countingObserver) ObserveCycle(Cycle)           {}

// cycleWithFakeClock runs one cycle and, once `fast` calls have been
// reported, steps the fake clock a timeout whenever `hung` calls are
// blocked in the fake runtime and as many timers wait, until the cycle
// returns. A reported call has stopped its timer, so the timers waiting
// then are the hung calls'.
func cycleWithFakeClock(t *testing.T, p *Prober, clk *clocktesting.FakeClock, obs *countingObserver, fast int64, hung int) Cycle {
	t.Helper()
	f := p.runtime.(*critest.Runtime)
	done := make(chan Cycle, 1)
	go func() { done <- p.Cycle(context.Background()) }()
	var c Cycle
	got := false
	returned := func() bool {
		select {
		case c = <-done:
			got = true
		default:
		}
		return got
	}
	clocktest.Await(t, "the fast calls", func() bool { return returned() || obs.probes.Load() >= fast })
	if !got {
		clocktest.Await(t, "the cycle to return", func() bool {
			if f.Blocked() >= hung && clk.Waiters() >= hung {
				clk.Step(p.cfg.Timeout)
			}
			return returned()
		})
	}
	return c
}

// sleepingLoops says n loops (Run, Heartbeat) wait between probes and
// no other timer is out: stepping the fake clock then moves only them.
func sleepingLoops(p *Prober, clk *clocktesting.FakeClock, n int) func() bool {
	return func() bool { return p.sleeping.Load() == int32(n) && clk.Waiters() == n }
}

func newTestProber(f *critest.Runtime, cfg Config) (*Prober, *clocktesting.FakeClock, *countingObserver) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	obs := &countingObserver{}
	return NewProber(f, f, cfg, clk, obs), clk, obs
}

// TestTheFakeNamesTheMethodsAsCriDoes: critest cannot import cri, so it
// names the methods by their gRPC names; a cycle over it sends each of
// Methods once, counted under cri's name.
func TestTheFakeNamesTheMethodsAsCriDoes(t *testing.T) {
	f := critest.New(1, 1)
	f.SetStreams(true)
	p, _, _ := newTestProber(f, testConfig())
	p.Cycle(context.Background())
	for _, m := range Methods {
		if n := f.Count(m); n != 1 {
			t.Errorf("%s counted %d times, want 1", m, n)
		}
	}
}

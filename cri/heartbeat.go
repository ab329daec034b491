package cri

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Beat is one heartbeat: the runtime's Version call, timed and tracked in
// flight like a cycle's (a Version still out is not sent again).
type Beat struct {
	Call CallResult
	// Recovered says this beat answered after one that did not: the runtime
	// has just come back, and Run was woken for a full cycle at once.
	Recovered bool
}

// Heartbeat calls Version every period until ctx ends, handing each beat
// to sink. Its period never grows: a frozen runtime is seen within one
// period and one timeout, whatever the full cycles' back-off, and costs
// it at most the one Version call that is out. Run the full cycles with
// Run alongside; a beat that answers after one that did not wakes them.
// A beat due within a period after a cycle's start, or just before a
// cycle due, is left to the cycle (beatShare.coveredFor): the cycle's
// calls, timed in flight, tell what it would.
func (p *Prober) Heartbeat(ctx context.Context, period time.Duration, sink func(Beat)) {
	failing := false
	for {
		start := p.clock.Now() // not r.Start: a joined call may be older
		r := p.invoke(ctx, MethodVersion, "", func(ctx context.Context) (proto.Message, error) {
			return p.runtime.Version(ctx, &runtimeapi.VersionRequest{})
		})
		if ctx.Err() != nil {
			return
		}
		p.share.learnRuntime(r)
		ok := r.Class == ClassOK || r.Class == ClassSlow
		b := Beat{Call: r, Recovered: ok && failing}
		failing = !ok
		if b.Recovered {
			p.Wake()
		}
		sink(b)
		if !p.sleepToNextBeat(ctx, start, period) {
			return
		}
	}
}

// sleepToNextBeat waits until a period after the last beat's start, so a
// slow answer does not stretch the period, then for as long as a cycle
// covers the beat due; false when ctx ended first.
func (p *Prober) sleepToNextBeat(ctx context.Context, last time.Time, period time.Duration) bool {
	wait := period - p.clock.Since(last)
	for {
		if wait <= 0 {
			wait = p.share.coveredFor(p.clock.Now(), period)
		}
		if wait <= 0 {
			return true
		}
		if !p.sleep(ctx, wait) {
			return false
		}
		wait = 0
	}
}

// sleep waits d on the prober's clock; false when ctx ended first.
func (p *Prober) sleep(ctx context.Context, d time.Duration) bool {
	return p.sleepOrWake(ctx, d, nil) != sleptCancelled
}

type slept int

const (
	sleptFull slept = iota
	sleptWoken
	sleptCancelled
)

// sleepOrWake waits d on the prober's clock, or until wake delivers or
// ctx ends, and says which ended it.
func (p *Prober) sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) slept {
	t := p.clock.NewTimer(d)
	defer t.Stop()
	p.sleeping.Add(1)
	defer p.sleeping.Add(-1)
	select {
	case <-ctx.Done():
		return sleptCancelled
	case <-wake:
		return sleptWoken
	case <-t.C():
		return sleptFull
	}
}

// Wake cuts Run's current wait short: the next full cycle starts now.
func (p *Prober) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// WithBeat is the cycle as the latest beat updates it: the beat's Version
// result replaces the cycle's when it is newer, and stands in for it when
// the cycle left Version to the heartbeat (an older beat then only when
// it answered: the cycle's own calls are newer evidence of a failure). A
// cycle's other calls stand until the next cycle, so a healthy beat never
// clears a hung list call, and a hung beat raises RuntimeHung between
// cycles. A beat the socket refused after the cycle stands for the whole
// cycle: the runtime is unreachable.
func (c Cycle) WithBeat(b Beat) Cycle {
	if b.Call.Method != MethodVersion {
		return c
	}
	own := slices.IndexFunc(c.Calls, func(r CallResult) bool { return r.Method == MethodVersion && r.Object == "" })
	newer := !b.Call.Start.Before(c.Start)
	answered := b.Call.Class == ClassOK || b.Call.Class == ClassSlow
	switch {
	case newer && b.Call.Class == ClassUnreachable:
		// The socket refused a call made after the whole cycle: none of
		// the cycle's calls would reach the runtime now either.
		c.Calls = []CallResult{b.Call}
		return c
	case own >= 0 && b.Call.Start.Before(c.Calls[own].Start), own < 0 && !newer && !answered:
		return c
	}
	calls := slices.Clone(c.Calls)
	if own >= 0 {
		calls[own] = b.Call
	} else {
		calls = append(calls, b.Call)
	}
	c.Calls = calls
	return c
}

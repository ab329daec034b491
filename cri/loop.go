package cri

import (
	"context"
	"time"
)

// Run probes until ctx ends, handing each cycle to sink. The wait between
// cycles is counted from the end of the last one. After a cycle that saw a
// timeout or a slow call the wait doubles, up to maxPeriod, so a struggling
// runtime is probed less; a clean cycle restores the period. Wake (a
// heartbeat that sees the runtime come back) starts the next cycle at once;
// Relax (a beat that answers on time after slow ones) ends the back-off.
func (p *Prober) Run(ctx context.Context, period, maxPeriod time.Duration, sink func(Cycle)) {
	wait := period
	for {
		c := p.Cycle(ctx)
		if ctx.Err() != nil {
			return
		}
		sink(c)
		wait = nextWait(c, wait, period, maxPeriod)
		var ok bool
		if wait, ok = p.pause(ctx, wait, period); !ok {
			return
		}
	}
}

// pause waits wait before the next cycle and returns the wait the next
// back-off doubles from; false when ctx ended. Wake ends it at once. Relax
// during a back-off ends it a period after it began: the cadence is back
// to normal within a period of the slowness ending.
func (p *Prober) pause(ctx context.Context, wait, period time.Duration) (time.Duration, bool) {
	began := p.clock.Now()
	end := began.Add(wait)
	p.share.cycleDue(end)
	p.backingOff.Store(wait > period)
	defer p.backingOff.Store(false)
	for {
		left := end.Sub(p.clock.Now())
		if left <= 0 {
			return wait, true
		}
		switch p.sleepOrWake(ctx, left, p.wake, p.relax) {
		case sleptCancelled:
			return wait, false
		case sleptWoken:
			return period, true
		case sleptFull:
			return wait, true
		case sleptRelaxed:
			wait, end = period, began.Add(period)
			p.share.cycleDue(end)
			p.backingOff.Store(false)
		}
	}
}

func nextWait(c Cycle, last, period, maxPeriod time.Duration) time.Duration {
	for _, r := range c.Calls {
		if r.Class == ClassTimeout || r.Class == ClassSlow {
			return min(2*last, max(maxPeriod, period))
		}
	}
	return period
}

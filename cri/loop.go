package cri

import (
	"context"
	"time"
)

// Run probes until ctx ends, handing each cycle to sink. The wait between
// cycles is counted from the end of the last one. After a cycle that saw a
// timeout or a slow call the wait doubles, up to maxPeriod, so a struggling
// runtime is probed less; a clean cycle restores the period. Wake (a
// heartbeat that sees the runtime come back) starts the next cycle at once.
func (p *Prober) Run(ctx context.Context, period, maxPeriod time.Duration, sink func(Cycle)) {
	wait := period
	for {
		c := p.Cycle(ctx)
		if ctx.Err() != nil {
			return
		}
		sink(c)
		wait = nextWait(c, wait, period, maxPeriod)
		p.share.cycleDue(p.clock.Now().Add(wait))
		switch p.sleepOrWake(ctx, wait, p.wake) {
		case sleptCancelled:
			return
		case sleptWoken:
			wait = period
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

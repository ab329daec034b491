package agent

import (
	"context"
	"sync"

	"github.com/hangwatch/hangwatch/cri"
)

// runtimeView joins the full probe cycles and the heartbeat into the one
// `cri` input: the latest cycle, with its Version result replaced by a
// newer beat's. A hung beat raises RuntimeHung between cycles; a healthy
// beat leaves a cycle's hung calls standing until the next cycle.
type runtimeView struct {
	mu      sync.Mutex
	cycle   *cri.Cycle
	beat    *cri.Beat
	observe func(cri.Cycle)
}

func (v *runtimeView) onCycle(c cri.Cycle) {
	v.mu.Lock()
	v.cycle = &c
	if v.beat != nil {
		c = c.WithBeat(*v.beat)
	}
	v.mu.Unlock()
	v.observe(c)
}

// onBeat is observed only once a cycle has been: a beat alone says
// nothing about the list and status calls.
func (v *runtimeView) onBeat(b cri.Beat) {
	v.mu.Lock()
	v.beat = &b
	if v.cycle == nil {
		v.mu.Unlock()
		return
	}
	c := v.cycle.WithBeat(b)
	v.mu.Unlock()
	v.observe(c)
}

// heartbeatLoop calls Version every --heartbeat-period until ctx ends.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	a.prober.Heartbeat(ctx, a.cfg.Runtime.EffectiveHeartbeat(), a.runtime.onBeat)
}

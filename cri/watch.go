package cri

import (
	"context"
	"sync"
	"time"

	"github.com/hangwatch/hangwatch/observations"
)

// runtimeView joins the full probe cycles and the heartbeat into the one
// `cri` input: the latest cycle, with its Version result replaced by a
// newer beat's. A hung beat raises RuntimeHung between cycles; a healthy
// beat leaves a cycle's hung calls standing until the next cycle.
type runtimeView struct {
	mu      sync.Mutex
	cycle   *Cycle
	beat    *Beat
	observe func(Cycle)
}

func (v *runtimeView) onCycle(c Cycle) {
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
func (v *runtimeView) onBeat(b Beat) {
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

// Watch runs the full probe cycles and the heartbeat until ctx ends and
// hands on the `cri` input of the condition rules (Cycle.Observation).
type Watch struct {
	Prober            *Prober
	Period, MaxPeriod time.Duration
	// Heartbeat is the time between heartbeats; 0: none.
	Heartbeat time.Duration
	// Timeout is the calls' timeout, which the input reports.
	Timeout time.Duration
	// OnCycle, if set, is told each full cycle before the input is.
	OnCycle func(Cycle)
}

// Run probes until ctx ends, handing on the input after each cycle and
// each beat (once a cycle has been).
func (w *Watch) Run(ctx context.Context, emit func(observations.Input)) {
	view := &runtimeView{observe: func(c Cycle) { emit(c.Observation(w.Timeout)) }}
	var wg sync.WaitGroup
	if w.Heartbeat > 0 {
		w.Prober.VersionByHeartbeat() // before the first cycle
		wg.Add(1)
		go func() { defer wg.Done(); w.Prober.Heartbeat(ctx, w.Heartbeat, view.onBeat) }()
	}
	w.Prober.Run(ctx, w.Period, w.MaxPeriod, func(c Cycle) {
		if w.OnCycle != nil {
			w.OnCycle(c)
		}
		view.onCycle(c)
	})
	wg.Wait()
}

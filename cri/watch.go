package cri

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/observations"
)

// runtimeView joins the full probe cycles and the heartbeat into the one
// `cri` input: the latest cycle, updated by the latest beat of each kind,
// oldest first (Cycle.WithBeat). A hung beat raises RuntimeHung between
// cycles; a healthy beat leaves a cycle's hung calls standing until the
// next cycle.
type runtimeView struct {
	mu      sync.Mutex
	cycle   *Cycle
	beats   map[string]Beat // by method
	observe func(Cycle)
	// runtimeAnswered tells whether the runtime itself answered the
	// method since the time, its calls sent by then no longer out; nil:
	// every beat reported in flight stands.
	runtimeAnswered func(method string, since time.Time) bool
}

func (v *runtimeView) onCycle(c Cycle) {
	v.mu.Lock()
	v.cycle = &c
	c = v.withBeats(c)
	v.mu.Unlock()
	v.observe(c)
}

// onBeat is observed only once a cycle has been: a beat alone says
// nothing about the other calls.
func (v *runtimeView) onBeat(b Beat) {
	v.mu.Lock()
	if v.beats == nil {
		v.beats = map[string]Beat{}
	}
	v.beats[b.Call.Method] = b
	if v.cycle == nil {
		v.mu.Unlock()
		return
	}
	c := v.withBeats(*v.cycle)
	v.mu.Unlock()
	v.observe(c)
}

// withBeats applies the latest beats to c, oldest first. Called with v.mu held.
func (v *runtimeView) withBeats(c Cycle) Cycle {
	beats := make([]Beat, 0, len(v.beats))
	for _, b := range v.beats {
		beats = append(beats, b)
	}
	slices.SortFunc(beats, func(a, b Beat) int { return a.Call.Start.Compare(b.Call.Start) })
	for _, b := range beats {
		if v.answeredSince(b) {
			continue // the call it reported hung has answered: the runtime is back, and the cycles say how it is
		}
		c = c.WithBeat(b)
	}
	return c
}

// answeredSince tells whether b reported a call in flight that has
// returned since: a thaw after the heartbeat caught the freeze is seen at
// the cycle the answer wakes, not at the next beat of its kind.
func (v *runtimeView) answeredSince(b Beat) bool {
	return b.Call.InFlight && v.runtimeAnswered != nil && v.runtimeAnswered(b.Call.Method, b.Call.Start)
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
	view := &runtimeView{observe: func(c Cycle) {
		logCalls(c)
		emit(c.Observation(w.Timeout))
	}, runtimeAnswered: w.Prober.inflight.answeredSince}
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

// logCalls logs, at -v=4, the calls the condition rules are about to
// judge: how each ended and when it was sent, relative to the cycle.
func logCalls(c Cycle) {
	if !klog.V(4).Enabled() {
		return
	}
	calls := make([]string, 0, len(c.Calls))
	for _, r := range c.Calls {
		s := callName(r) + "=" + string(r.Class) + "@" + r.Start.Sub(c.Start).Round(time.Millisecond).String()
		if r.InFlight {
			s += "(in flight)"
		}
		if r.Err != "" {
			s += ": " + r.Err
		}
		calls = append(calls, s)
	}
	klog.V(4).InfoS("CRI calls judged", "cycleStart", c.Start, "calls", calls)
}

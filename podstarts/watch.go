package podstarts

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Source feeds a tracker from one stream of the kubelet's pods until the
// stream ends or ctx does (*PodsAPI).
type Source interface {
	Stream(ctx context.Context, t *Tracker) error
}

// Watch hands on the `podStarts` input every Period while the kubelet's
// pods are known, streaming them from Source and streaming again after a
// break (Retry, doubling to MaxRetry).
type Watch struct {
	Source  Source
	Tracker *Tracker
	Period  time.Duration
	// Timeout bounds the runtime's lists on each observation.
	Timeout  time.Duration
	Retry    time.Duration
	MaxRetry time.Duration
	Clock    clock.WithTicker
	// Metrics, when set, follow each observation.
	Metrics *Metrics
	// Probe, when set (opt-in), starts sandboxes of its own on a quiet
	// node; its wait is the observation's probeInFlightSeconds.
	Probe *Probe
}

// Run streams and observes until ctx ends.
func (w *Watch) Run(ctx context.Context, emit func(observations.Input)) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.stream(ctx) }()
	if w.Probe != nil {
		wg.Add(1)
		go func() { defer wg.Done(); w.Probe.Run(ctx) }()
	}
	defer wg.Wait()
	tick := w.Clock.NewTicker(w.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			if obs, ok := w.observe(ctx); ok {
				emit(obs)
			}
		}
	}
}

func (w *Watch) observe(ctx context.Context) (observations.PodStarts, bool) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	obs, ok := w.Tracker.Observe(ctx)
	if ok {
		obs.ProbeInFlightSeconds = w.Probe.InFlight().Seconds()
		w.Metrics.observe(obs)
	}
	return obs, ok
}

// stream keeps a stream open, logging a break once a spell: a kubelet
// restarting, or one whose Pods API is off.
func (w *Watch) stream(ctx context.Context) {
	wait, broken := w.Retry, false
	for {
		began := w.Clock.Now()
		err := w.Source.Stream(ctx, w.Tracker)
		if ctx.Err() != nil {
			return
		}
		if w.Clock.Since(began) > w.MaxRetry {
			wait, broken = w.Retry, false // it had been streaming a while
		}
		if !broken {
			klog.ErrorS(err, "The kubelet's pod stream broke; PodStartStuck holds until it is back", "retry", wait)
			broken = true
		} else {
			klog.V(2).InfoS("The kubelet's pod stream is still down", "err", err, "retry", wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.Clock.After(wait):
		}
		wait = min(2*wait, w.MaxRetry)
	}
}

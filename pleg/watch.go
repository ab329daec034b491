package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/observations"
)

// Watch runs a Monitor until ctx ends and hands on the `pleg` input of the
// condition rules (Assessment.Observation), logging each change of
// verdict or reason.
type Watch struct {
	Monitor                       *Monitor
	ScrapePeriod, EmulationPeriod time.Duration
	// EmulationWait bounds one emulated relist (the CRI timeout); one
	// still out is reported as such.
	EmulationWait time.Duration
	mu            sync.Mutex
	last          Assessment
}

// Run scrapes and emulates until ctx ends.
func (w *Watch) Run(ctx context.Context, emit func(observations.Input)) {
	w.Monitor.o.OnAssessment = func(a Assessment) {
		w.mu.Lock()
		changed := a.Verdict != w.last.Verdict || a.Reason != w.last.Reason
		w.last = a
		w.mu.Unlock()
		if changed {
			klog.InfoS("PLEG assessment", "verdict", a.Verdict, "reason", a.Reason, "message", a.Message)
		}
		emit(a.Observation())
	}
	w.Monitor.Run(ctx, w.ScrapePeriod, w.EmulationPeriod, w.EmulationWait)
}

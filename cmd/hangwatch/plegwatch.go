package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/pleg"
)

// plegWatch runs the PLEG monitor and feeds the `pleg` input.
type plegWatch struct {
	monitor  *pleg.Monitor
	relister *cri.Relister
	flags    *plegFlags
	mu       sync.Mutex
	last     pleg.Assessment
}

// newPLEGWatch returns nil when neither the kubelet's metrics nor the
// emulation are available.
func (d *daemon) newPLEGWatch() (*plegWatch, error) {
	f := &d.o.pleg
	node, err := d.o.api.node()
	if err != nil {
		return nil, err
	}
	sc, err := f.kubelet.scraper(node)
	if err != nil {
		return nil, err
	}
	var rel *cri.Relister
	if f.emulationPeriod > 0 {
		rel = cri.NewRelister(d.conn.Runtime, d.clk, cri.KubeletRuntimeRequestTimeout)
	}
	if sc == nil && rel == nil {
		return nil, nil
	}
	w := &plegWatch{relister: rel, flags: f}
	w.monitor = pleg.NewMonitor(pleg.Options{Config: f.cfg, Scraper: sc, Window: f.window, Relister: rel,
		Metrics: pleg.NewMetrics(d.reg), OnAssessment: func(a pleg.Assessment) {
			w.mu.Lock()
			changed := a.Verdict != w.last.Verdict || a.Reason != w.last.Reason
			w.last = a
			w.mu.Unlock()
			if changed {
				klog.InfoS("PLEG assessment", "verdict", a.Verdict, "reason", a.Reason, "message", a.Message)
			}
			d.engine.Observe(conditions.InputPLEG, a.Observation())
		},
		// probe the list streams only if the kubelet uses them
		OnListStreaming: func(on bool) { d.prober.ProbeStreams(on) }}, d.clk)
	klog.InfoS("Watching PLEG health", "kubeletMetrics", f.kubelet.opts.URL, "emulation", rel != nil)
	return w, nil
}

// run scrapes and emulates until ctx ends; one emulation is waited for at
// most emulationWait (the CRI --timeout), then reported as still out.
func (w *plegWatch) run(ctx context.Context, emulationWait time.Duration) {
	w.monitor.Run(ctx, w.flags.scrapePeriod, w.flags.emulationPeriod, emulationWait)
}

func (w *plegWatch) close() {
	if w != nil && w.relister != nil {
		w.relister.Close()
	}
}

package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// plegWatch runs the PLEG monitor and feeds the `pleg` input.
type plegWatch struct {
	monitor  *pleg.Monitor
	relister *cri.Relister
	cfg      config.PLEG
	scrape   time.Duration // kubelet.metricsPeriod
	mu       sync.Mutex
	last     pleg.Assessment
}

// newPLEGWatch returns nil when neither the kubelet's metrics nor the
// emulation are available.
func (a *Agent) newPLEGWatch() (*plegWatch, error) {
	f := a.cfg.PLEG
	sc, err := kubeletmetrics.ScraperFor(a.cfg.Kubelet.Options(), a.o.Node)
	if err != nil {
		return nil, err
	}
	var rel *cri.Relister
	if f.EmulationPeriod.Duration > 0 {
		rel = cri.NewRelister(a.conn.Runtime, a.o.Clock, cri.KubeletRuntimeRequestTimeout)
	}
	if sc == nil && rel == nil {
		return nil, nil
	}
	w := &plegWatch{relister: rel, cfg: f, scrape: a.cfg.Kubelet.MetricsPeriod.Duration}
	w.monitor = pleg.NewMonitor(pleg.Options{Config: f.Config(), Scraper: sc, Window: f.Window.Duration, Relister: rel,
		Metrics: pleg.NewMetrics(a.o.Registry), OnAssessment: func(as pleg.Assessment) {
			w.mu.Lock()
			changed := as.Verdict != w.last.Verdict || as.Reason != w.last.Reason
			w.last = as
			w.mu.Unlock()
			if changed {
				klog.InfoS("PLEG assessment", "verdict", as.Verdict, "reason", as.Reason, "message", as.Message)
			}
			a.engine.Observe(conditions.InputPLEG, as.Observation())
		},
		// probe the list streams only if the kubelet uses them
		OnListStreaming: func(on bool) { a.prober.ProbeStreams(on) }}, a.o.Clock)
	klog.InfoS("Watching PLEG health", "kubeletMetrics", a.cfg.Kubelet.MetricsURL, "emulation", rel != nil)
	return w, nil
}

// run scrapes and emulates until ctx ends; one emulation is waited for at
// most emulationWait (the CRI --timeout), then reported as still out.
func (w *plegWatch) run(ctx context.Context, emulationWait time.Duration) {
	w.monitor.Run(ctx, w.scrape, w.cfg.EmulationPeriod.Duration, emulationWait)
}

func (w *plegWatch) close() {
	if w != nil && w.relister != nil {
		w.relister.Close()
	}
}

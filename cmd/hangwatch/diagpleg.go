package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// plegDiag holds what diag needs between starting and judging PLEG health:
// one emulated relist, and the kubelet's metrics when --kubelet-metrics-url
// is given (scraped as the probe cycles start, and again after them with
// --samples > 1, so the relist p99 has a window).
type plegDiag struct {
	monitor *pleg.Monitor
	rel     *cri.Relister
	url     string
	err     error
	done    sync.WaitGroup
}

// startPLEG scrapes the kubelet (bounded by --kubelet-metrics-timeout) and
// emulates one relist (waited for at most timeout), both beside the probe
// cycles, so a frozen runtime or a hung kubelet costs diag no extra time.
// diag cannot wait 30 s: an emulated relist still out after timeout is
// judged stalled, as a hung call is judged Hung after it.
func (o *diagOptions) startPLEG(ctx context.Context, conn *cri.Conn, timeout time.Duration) *plegDiag {
	pd := &plegDiag{url: o.kubelet.opts.URL}
	node, err := o.api.node()
	var sc *kubeletmetrics.Scraper
	if err == nil {
		sc, err = o.kubelet.scraper(node)
	}
	if err != nil {
		pd.err = err
		return pd
	}
	cfg := pleg.DefaultConfig()
	cfg.EmulationStallAfter = timeout
	cfg.SlowRelistsInARow, cfg.SlowFor = 1, 0 // diag sees one relist and says what it sees
	pd.rel = cri.NewRelister(conn.Runtime, clock.RealClock{}, cri.KubeletRuntimeRequestTimeout)
	pd.monitor = pleg.NewMonitor(pleg.Options{Config: cfg, Scraper: sc, Window: time.Hour, Relister: pd.rel}, clock.RealClock{})
	pd.done.Add(2)
	go func() { defer pd.done.Done(); pd.monitor.ScrapeOnce(ctx) }()
	go func() {
		defer pd.done.Done()
		ectx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		pd.monitor.EmulateOnce(ectx)
	}()
	return pd
}

// finish waits for the scrape and the emulation, scrapes again when there
// were several probe cycles (a window for the relist p99), and judges.
func (pd *plegDiag) finish(ctx context.Context, samples int) *pleg.Report {
	if pd.err != nil {
		return &pleg.Report{Assessment: pleg.Assessment{Verdict: pleg.VerdictUnknown}, KubeletMetricsURL: pd.url, Error: pd.err.Error()}
	}
	defer pd.rel.Close()
	pd.done.Wait()
	if samples > 1 {
		pd.monitor.ScrapeOnce(ctx)
	}
	return &pleg.Report{Assessment: pd.monitor.Assess(), KubeletMetricsURL: pd.url}
}

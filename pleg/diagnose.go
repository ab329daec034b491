package pleg

import (
	"context"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

// Diagnosis is `diag`'s PLEG check between its start and its verdict: one
// emulated relist, and the kubelet's metrics when a scraper is given
// (scraped as the probe cycles start, and again after them with several
// samples, so the relist p99 has a window). It judges with the daemon's
// Monitor and Assess, so diag and run say the same of the same signals.
type Diagnosis struct {
	monitor *Monitor
	rel     *Relister
	url     string
	err     error
	done    sync.WaitGroup
}

// Diagnose scrapes the kubelet (bounded by the scraper's timeout) and
// emulates one relist (waited for at most timeout), both beside the
// caller's probe cycles, so a frozen runtime or a hung kubelet costs no
// extra time. It cannot wait 30 s: an emulated relist still out after
// timeout is judged stalled, as a hung call is judged Hung after it. A
// scraper that could not be built is reported through scrapeErr.
func Diagnose(ctx context.Context, runtime runtimeapi.RuntimeServiceClient, sc *kubeletmetrics.Scraper, url string, scrapeErr error, timeout time.Duration) *Diagnosis {
	d := &Diagnosis{url: url, err: scrapeErr}
	if scrapeErr != nil {
		return d
	}
	cfg := DefaultConfig()
	cfg.EmulationStallAfter = timeout
	cfg.SlowRelistsInARow = 1 // one relist, judged as it is seen
	d.rel = NewRelister(runtime, clock.RealClock{}, KubeletRuntimeRequestTimeout)
	d.monitor = NewMonitor(Options{Config: cfg, Scraper: sc, Window: time.Hour, Relister: d.rel}, clock.RealClock{})
	d.done.Add(2)
	go func() { defer d.done.Done(); d.monitor.ScrapeOnce(ctx) }()
	go func() {
		defer d.done.Done()
		ectx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		d.monitor.EmulateOnce(ectx)
	}()
	return d
}

// Finish waits for the scrape and the emulation, scrapes again when there
// were several probe cycles (a window for the relist p99), and judges.
func (d *Diagnosis) Finish(ctx context.Context, samples int) *Report {
	if d.err != nil {
		return &Report{Assessment: Assessment{Verdict: VerdictUnknown}, KubeletMetricsURL: d.url, Error: d.err.Error()}
	}
	defer d.rel.Close()
	d.done.Wait()
	if samples > 1 {
		d.monitor.ScrapeOnce(ctx)
	}
	return &Report{Assessment: d.monitor.Assess(), KubeletMetricsURL: d.url}
}

package diag

import (
	"context"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// plegCheck is diag's PLEG check between its start and its verdict: one
// emulated relist, and the kubelet's metrics when a scraper is given
// (scraped as the probe cycles start, and again after them with several
// samples, so the relist p99 has a window). It judges with the daemon's
// pleg.Monitor and its Assess, so diag and run say the same of the same
// signals.
type plegCheck struct {
	monitor *pleg.Monitor
	rel     *pleg.Relister
	url     string
	err     error
	done    sync.WaitGroup
}

// startPLEGCheck scrapes the kubelet (bounded by the scraper's timeout)
// and emulates one relist (waited for at most a tenth more than timeout),
// both beside the caller's probe cycles, so a frozen runtime or a hung
// kubelet costs that tenth at most. It cannot wait 30 s: an emulated
// relist still out after timeout is judged stalled, as a hung call is judged Hung after it. A
// scraper that could not be built is reported through scrapeErr.
func startPLEGCheck(ctx context.Context, runtime runtimeapi.RuntimeServiceClient, sc *kubeletmetrics.Scraper, url string, scrapeErr error,
	timeout time.Duration, clk clock.WithTicker) *plegCheck {
	d := &plegCheck{url: url, err: scrapeErr}
	if scrapeErr != nil {
		return d
	}
	cfg := pleg.DefaultConfig()
	cfg.EmulationStallAfter = timeout
	cfg.SlowRelistsInARow = 1 // one relist, judged as it is seen
	d.rel = pleg.NewRelister(runtime, clk, pleg.KubeletRuntimeRequestTimeout)
	d.monitor = pleg.NewMonitor(pleg.Options{Config: cfg, Scraper: sc, Window: time.Hour, Relister: d.rel}, clk)
	d.done.Add(2)
	go func() { defer d.done.Done(); d.monitor.ScrapeOnce(ctx) }()
	go func() {
		defer d.done.Done()
		// A tenth more than timeout: measured from its own start (after
		// the goroutine's and the relister's lock's moment), a relist
		// still out at a deadline of exactly timeout could read 1.99s of
		// 2s and be judged waiting, not stalled (TestDiagFrozenRuntimeIsHung
		// failed so once on a quiet machine).
		ectx, cancel := context.WithTimeout(ctx, timeout+timeout/10)
		defer cancel()
		d.monitor.EmulateOnce(ectx)
	}()
	return d
}

// finish waits for the scrape and the emulation, scrapes again when there
// were several probe cycles (a window for the relist p99), and judges.
func (d *plegCheck) finish(ctx context.Context, samples int) *PLEGReport {
	if d.err != nil {
		return &PLEGReport{Assessment: pleg.Assessment{Verdict: pleg.VerdictUnknown}, KubeletMetricsURL: d.url, Error: d.err.Error()}
	}
	defer d.rel.Close()
	d.done.Wait()
	if samples > 1 {
		d.monitor.ScrapeOnce(ctx)
	}
	return &PLEGReport{Assessment: d.monitor.Assess(), KubeletMetricsURL: d.url}
}

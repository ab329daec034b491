package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

// Options wire a Monitor.
type Options struct {
	Config Config
	// Scraper reads the kubelet's metrics; nil when there is no access.
	Scraper *kubeletmetrics.Scraper
	// Window is the span the relist p99 is taken over.
	Window time.Duration
	// Relister emulates the relist; nil turns the emulation off.
	Relister *Relister
	// OnAssessment receives every new assessment.
	OnAssessment func(Assessment)
	// OnListStreaming, if set, receives the kubelet's CRIListStreaming gate
	// after each scrape that tells it (the Relister gets it too): whether
	// the kubelet lists with the CRI streams.
	OnListStreaming func(on bool)
	// OnSnapshot, if set, receives each scrape that worked, from the
	// scraping goroutine.
	OnSnapshot func(*kubeletmetrics.Snapshot)
	Metrics    *Metrics
}

// configzEvery is how often /configz is asked for the Evented PLEG gate.
const configzEvery = 10 * time.Minute

// Monitor keeps the latest of every PLEG signal.
type Monitor struct {
	o      Options
	clk    clock.WithTicker
	window *kubeletmetrics.Window
	// publishing keeps assessments in order: the scrape and emulation
	// loops both publish, and an older one must not be handed on last.
	publishing sync.Mutex
	mu         sync.Mutex
	metrics    MetricsState
	emul       *RelistResult
	// slowRelists counts completed emulated relists in a row that were
	// slow; counted is the start of the last one counted.
	slowRelists int
	counted     time.Time
	configz     struct {
		at    time.Time
		state kubeletmetrics.EventedPLEG
	}
}

// NewMonitor returns a monitor; nothing runs until Run or the *Once calls.
func NewMonitor(o Options, clk clock.WithTicker) *Monitor {
	m := &Monitor{o: o, clk: clk, window: kubeletmetrics.NewWindow(o.Window)}
	m.metrics.Configured = o.Scraper != nil
	return m
}

// Inputs returns the latest signals.
func (m *Monitor) Inputs() Inputs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Inputs{Now: m.clk.Now(), Metrics: m.metrics, Emulation: m.emul, SlowRelists: m.slowRelists}
}

// Assess judges the latest signals. How long RelistSlow must last before
// it counts is the PLEGUnhealthy rule's (conditions), not the monitor's.
func (m *Monitor) Assess() Assessment {
	return Assess(m.o.Config, m.Inputs())
}

// ScrapeOnce scrapes the kubelet (bounded by the scraper's own timeout),
// folds the result in and publishes the new assessment.
func (m *Monitor) ScrapeOnce(ctx context.Context) {
	if m.o.Scraper == nil {
		return
	}
	snap, err := m.o.Scraper.Scrape(ctx)
	if err == nil {
		m.refreshConfigz(ctx) // only a kubelet that answers is asked
	}
	now := m.clk.Now()
	m.mu.Lock()
	if err != nil {
		if m.metrics.Err == nil {
			m.metrics.FailingSince = now
		}
		m.metrics.Snapshot, m.metrics.Err = nil, err
	} else {
		m.metrics.Snapshot, m.metrics.Err, m.metrics.ScrapedAt = snap, nil, now
		m.metrics.Stats = m.window.Add(now, snap)
		m.metrics.Evented = m.eventedLocked(snap)
	}
	m.mu.Unlock()
	if on, known := snap.ListStreaming(); err == nil && known {
		m.tellListStreaming(on)
	}
	if err == nil && m.o.OnSnapshot != nil {
		m.o.OnSnapshot(snap)
	}
	m.o.Metrics.observeScrape(err)
	m.publish()
}

// tellListStreaming hands the kubelet's CRIListStreaming gate on, so the
// relist and the probes list as the kubelet lists.
func (m *Monitor) tellListStreaming(on bool) {
	if m.o.Relister != nil {
		m.o.Relister.SetListStreaming(on)
	}
	if m.o.OnListStreaming != nil {
		m.o.OnListStreaming(on)
	}
}

// refreshConfigz asks /configz for the Evented PLEG gate now and then; a
// kubelet that refuses (it needs nodes/proxy) leaves the metrics to tell.
func (m *Monitor) refreshConfigz(ctx context.Context) {
	m.mu.Lock()
	due := m.configz.at.IsZero() || m.clk.Since(m.configz.at) >= configzEvery
	if due {
		m.configz.at = m.clk.Now()
	}
	m.mu.Unlock()
	if !due {
		return
	}
	ev, err := m.o.Scraper.EventedFromConfigz(ctx)
	if err != nil {
		klog.V(2).InfoS("Kubelet /configz not read; the Evented PLEG is judged from the metrics", "err", err)
	}
	m.mu.Lock()
	m.configz.state = ev
	m.mu.Unlock()
}

func (m *Monitor) eventedLocked(snap *kubeletmetrics.Snapshot) kubeletmetrics.EventedPLEG {
	if m.configz.state.Known {
		return m.configz.state
	}
	return kubeletmetrics.EventedFromMetrics(snap)
}

// EmulateOnce runs (or joins) one emulated relist, waiting at most until
// ctx ends, and publishes the new assessment.
func (m *Monitor) EmulateOnce(ctx context.Context) {
	if m.o.Relister == nil {
		return
	}
	r := m.o.Relister.Relist(ctx)
	m.mu.Lock()
	m.emul = &r
	m.slowRelists, m.counted = countSlowRelists(m.slowRelists, m.counted, r, m.o.Config.SlowRelist)
	m.mu.Unlock()
	m.o.Metrics.observeRelist(r)
	m.publish()
}

func (m *Monitor) publish() {
	m.publishing.Lock()
	defer m.publishing.Unlock()
	a := m.Assess()
	m.o.Metrics.observeAssessment(a)
	if m.o.OnAssessment != nil {
		m.o.OnAssessment(a)
	}
}

// Run scrapes every scrapePeriod and, while emulationNeeded, emulates every
// emulationPeriod, each emulation waiting at most emulationWait, until ctx
// ends. The two loops are independent: a hung scrape never delays the
// emulation.
func (m *Monitor) Run(ctx context.Context, scrapePeriod, emulationPeriod, emulationWait time.Duration) {
	var wg sync.WaitGroup
	if m.o.Scraper != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.every(ctx, scrapePeriod, m.ScrapeOnce) }()
	}
	if m.o.Relister != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.every(ctx, emulationPeriod, func(ctx context.Context) {
				if !m.emulationNeeded() {
					return
				}
				wctx, cancel := context.WithTimeout(ctx, emulationWait)
				defer cancel()
				m.EmulateOnce(wctx)
			})
		}()
	}
	wg.Wait()
}

// emulationNeeded says whether the emulated relist should run. It costs
// CRI calls next to the kubelet's own (two lists each period, and every
// changed pod inspected again), and the kubelet's kubelet_pleg_last_seen_seconds
// tells a stalled relist as soon, so it runs only when that gauge cannot
// be trusted (no scrape, the last scrape failed, the gauge is absent, the
// Evented PLEG is on in a kubelet before 1.37), when the gauge already shows a slow relist (ours
// then tells whether the runtime is the cause), and while a relist of its
// own is out or failed, so a stall it found keeps being measured.
func (m *Monitor) emulationNeeded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.emul != nil && (m.emul.InFlight || m.emul.Class != cri.ClassOK) {
		return true
	}
	ms := m.metrics
	switch {
	case ms.Configured && ms.Snapshot == nil && ms.Err == nil:
		return false // the first scrape is still out: it may make the emulation unneeded
	case !ms.Configured || ms.Err != nil || !ms.Snapshot.HasLastSeen || !kubeletmetrics.LastSeenTrusted(ms.Evented, ms.Snapshot.Build):
		return true
	}
	// The gauge's age when it was read, not now: between scrapes the
	// relist it shows only looks older.
	return ms.ScrapedAt.Sub(ms.Snapshot.LastSeen) >= m.o.Config.SlowRelist ||
		m.clk.Since(ms.ScrapedAt) >= m.o.Config.StaleAfter
}

func (m *Monitor) every(ctx context.Context, period time.Duration, f func(context.Context)) {
	t := m.clk.NewTicker(period)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// countSlowRelists counts completed relists in a row that took slow or
// more, each once (a look that joins a relist still out, or finds the same
// one again, does not count); counted is the start of the last counted.
func countSlowRelists(inARow int, counted time.Time, r RelistResult, slow time.Duration) (int, time.Time) {
	if r.InFlight || r.Start.Equal(counted) {
		return inARow, counted
	}
	if r.Duration >= slow && r.Err == "" {
		return inARow + 1, r.Start
	}
	return 0, r.Start
}

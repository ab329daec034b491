package kernellog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Watch follows the kernel log through the rules and hands on the `kernel`
// input of the condition rules: each kernel condition's type mapped to its
// Fields (active, reason, message, matches). A failed read closes the log
// and opens it again with backoff (watchreopen.go).
//
// The input is built from the monitor's states after each record, never
// from inside the monitor: no callback runs under the monitor's lock.
type Watch struct {
	monitor *Monitor
	metrics *Metrics
	clk     clock.WithTicker
	open    func(lookback time.Duration) (Source, error)
	changed atomic.Bool // a condition changed since the input was last handed on
	emit    func(observations.Input)

	mu        sync.Mutex // guards what /healthz reads: src, downSince
	src       Source
	downSince time.Time // zero while the log is read
	lookback  time.Duration
	lastRead  time.Time // the last read that worked
	last      KmsgStats
	sent      time.Time // when the input was last handed on
}

// WatchOptions configure a Watch.
type WatchOptions struct {
	// Open opens the kernel log, skipping records older than lookback
	// (OpenSource with the path bound).
	Open func(lookback time.Duration) (Source, error)
	// Lookback is --kernel-lookback: how far back the first open reads.
	Lookback time.Duration
	Metrics  *Metrics
	// OnEvent is told each kernel event (a temporary rule's match).
	OnEvent func(Event)
	Clock   clock.WithTicker
}

// resendEvery is how often the whole `kernel` input is handed on again
// while nothing changes, so a condition the rules did not decide (one
// restored from the Node) is evaluated again as time passes.
const resendEvery = time.Second

// NewWatch compiles the rules; nothing is read until Open.
func NewWatch(sets []*RuleSet, o WatchOptions) (*Watch, error) {
	w := &Watch{metrics: o.Metrics, clk: o.Clock, open: o.Open, lookback: o.Lookback, emit: func(observations.Input) {}}
	mon, err := NewMonitor(sets, o.Clock, Options{Metrics: o.Metrics, OnEvent: o.OnEvent,
		OnCondition: func(ConditionState) { w.changed.Store(true) }})
	if err != nil {
		return nil, err
	}
	w.monitor = mon
	return w, nil
}

// Monitor is the rules' state.
func (w *Watch) Monitor() *Monitor { return w.monitor }

// Open opens the log and reads the lookback window through the rules.
func (w *Watch) Open() error {
	src, err := w.open(w.lookback)
	if err == nil {
		err = src.ReadAvailable(w.monitor.Handle)
	}
	if err != nil {
		return err
	}
	w.src, w.lastRead = src, w.clk.Now()
	w.exportStats()
	return nil
}

// Input is the `kernel` input as the rules stand now.
func (w *Watch) Input() observations.Kernel {
	states := w.monitor.Conditions()
	in := make(observations.Kernel, len(states))
	for _, st := range states {
		in[st.Type] = st.Fields()
	}
	return in
}

// Run hands on the input at once, then after each change and at least
// every resendEvery, until ctx ends. Open must have worked.
func (w *Watch) Run(ctx context.Context, emit func(observations.Input)) {
	w.emit = emit
	w.send()
	w.follow(ctx)
}

// handle runs one record through the rules and hands on a change.
func (w *Watch) handle(r Record) {
	w.monitor.Handle(r)
	if w.changed.Swap(false) {
		w.send()
	}
}

func (w *Watch) send() {
	w.changed.Store(false)
	w.sent = w.clk.Now()
	w.emit(w.Input())
}

// tick is the time-based work after each read: quiet windows, held-back
// events, counters, and the input handed on again.
func (w *Watch) tick() {
	w.lastRead = w.clk.Now()
	w.monitor.Expire()
	w.exportStats()
	if w.changed.Load() || w.clk.Since(w.sent) >= resendEvery {
		w.send()
	}
}

func (w *Watch) exportStats() {
	w.mu.Lock()
	s := w.src.Stats()
	w.mu.Unlock()
	w.metrics.Lines.Add(float64(s.Lines - w.last.Lines))
	w.metrics.Lost.Add(float64(s.Lost - w.last.Lost))
	w.metrics.ParseErrors.Add(float64(s.ParseErrors - w.last.ParseErrors))
	w.last = s
}

// Close closes the log.
func (w *Watch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.src != nil {
		_ = w.src.Close()
	}
}

// neverClears stands for the quiet window of a rule that only a recovery
// line clears.
const neverClears = 100 * 365 * 24 * time.Hour

// RestoredHolds is, for each kernel condition, its rules' quiet window: a
// KernelDeadlock=True read back from the Node was raised by a line this
// process may not see again (older than --kernel-lookback), so it clears
// only once the quiet window has passed since the restore without a match.
func (w *Watch) RestoredHolds() map[string]time.Duration {
	holds := map[string]time.Duration{}
	for _, c := range w.monitor.ConditionTypes() {
		q, ok := w.monitor.QuietWindow(c.Type)
		if !ok {
			q = neverClears
		}
		holds[c.Type] = q
	}
	return holds
}

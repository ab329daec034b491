package agent

import (
	"maps"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/kernellog"
)

// kernelWatch follows /dev/kmsg through the kernel rules into conditions
// and events.
type kernelWatch struct {
	kmsg    kernellog.Source
	monitor *kernellog.Monitor
	metrics *kernellog.Metrics
	last    kernellog.KmsgStats
	clk     clock.WithTicker
	// open opens the log again after a failure, skipping records older
	// than its argument; lookback is --kernel-lookback.
	open      func(lookback time.Duration) (kernellog.Source, error)
	lookback  time.Duration
	lastRead  time.Time // the last read that worked
	downSince time.Time // zero while the log is read; guarded by mu
	mu        sync.Mutex
	states    map[string]any // the `kernel` input: condition type to its state
	sink      func(map[string]any)
	sent      time.Time // when the input was last handed on
}

// resendEvery is how often the whole `kernel` input is handed on again
// while nothing changes, so a condition the rules did not decide (one
// restored from the Node) is evaluated again as time passes.
const resendEvery = time.Second

// buildKernelMonitor compiles the rules; each condition change goes to
// onCondition.
func buildKernelMonitor(sets []*kernellog.RuleSet, clk clock.PassiveClock, onCondition func(kernellog.ConditionState),
	events *kernelEventLog, metrics *kernellog.Metrics) (*kernellog.Monitor, error) {
	return kernellog.NewMonitor(sets, clk, kernellog.Options{Metrics: metrics, OnEvent: events.add, OnCondition: onCondition})
}

// observe returns the monitor's condition callback: it keeps the state of
// every kernel condition and hands the whole `kernel` input to sink.
func (k *kernelWatch) observe(sink func(map[string]any)) func(kernellog.ConditionState) {
	k.sink = sink
	return func(st kernellog.ConditionState) {
		k.mu.Lock()
		k.states[st.Type] = st.Fields()
		k.sent = k.clk.Now()
		obs := maps.Clone(k.states)
		k.mu.Unlock()
		sink(obs)
	}
}

// observeAll hands on every condition's state, once the lookback is read.
// The monitor's states are read before k.mu is taken: the monitor calls
// observe's callback, which takes k.mu, under its own lock, so taking them
// in the other order here could deadlock. A state the callback stored
// meanwhile is newer and stays.
func (k *kernelWatch) observeAll() {
	states := k.monitor.Conditions()
	k.mu.Lock()
	for _, st := range states {
		if _, told := k.states[st.Type]; !told {
			k.states[st.Type] = st.Fields()
		}
	}
	k.sent = k.clk.Now()
	obs := maps.Clone(k.states)
	k.mu.Unlock()
	k.sink(obs)
}

// resend hands the unchanged input on again once resendEvery has passed.
func (k *kernelWatch) resend() {
	k.mu.Lock()
	if k.clk.Since(k.sent) < resendEvery {
		k.mu.Unlock()
		return
	}
	k.sent = k.clk.Now()
	obs := maps.Clone(k.states)
	k.mu.Unlock()
	k.sink(obs)
}

// tick is the time-based work after each read: quiet windows, held-back
// events, counters, and the input handed on again.
func (k *kernelWatch) tick() {
	k.lastRead = k.clk.Now()
	k.monitor.Expire()
	k.exportStats()
	k.resend()
}

func (k *kernelWatch) exportStats() {
	s := k.kmsg.Stats()
	k.metrics.Lines.Add(float64(s.Lines - k.last.Lines))
	k.metrics.Lost.Add(float64(s.Lost - k.last.Lost))
	k.metrics.ParseErrors.Add(float64(s.ParseErrors - k.last.ParseErrors))
	k.last = s
}

// neverClears stands for the quiet window of a rule that only a recovery
// line clears.
const neverClears = 100 * 365 * 24 * time.Hour

// restoredHolds is, for each kernel condition, its rules' quiet window: a
// KernelDeadlock=True read back from the Node was raised by a line this
// process may not see again (older than --kernel-lookback), so it clears
// only once the quiet window has passed since the restore without a match.
func restoredHolds(mon *kernellog.Monitor) map[string]time.Duration {
	if mon == nil {
		return nil
	}
	holds := map[string]time.Duration{}
	for _, c := range mon.ConditionTypes() {
		w, ok := mon.QuietWindow(c.Type)
		if !ok {
			w = neverClears
		}
		holds[c.Type] = w
	}
	return holds
}

package leases

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Watch hands on the `lease` input of the condition rules
// (Observation.Fields) until ctx ends: the kubelet's local /healthz, probed
// every HealthzPeriod, and the node's Lease, read every IdlePeriod while
// the kubelet answers on the node and renewed on time, and every Period
// otherwise, to time the grace period.
//
// The local probe is free; each Lease read is a request to the API server
// from every node. A kubelet that answers on the node and renews on time
// needs no more than a look now and then; one that stops answering is seen
// within a probe, and only then is its Lease read often.
type Watch struct {
	Client Client
	Node   string
	// Grace is --node-monitor-grace-period; 0: the controller's default
	// for the API server's version (GraceFor).
	Grace time.Duration
	// Period is how often the Lease is read while the kubelet does not
	// answer, or the Lease is late, missing or unreadable.
	Period time.Duration
	// IdlePeriod is how often it is read otherwise; no longer than Period,
	// or no Healthz: always Period.
	IdlePeriod time.Duration
	Metrics    *Metrics
	Clock      clock.WithTicker
	// Healthz probes the kubelet's local /healthz every HealthzPeriod;
	// nil: not probed.
	Healthz       Prober
	HealthzPeriod time.Duration
	// Nudge, when a receive comes, says the kubelet's renewals may have
	// stopped landing while it answers (its own rest_client_requests_total
	// counts failed PUTs): the Lease is read at once, at most once per
	// IdlePeriod, and again when it would be 2 renewals late. nil: none.
	Nudge <-chan struct{}

	silence   kubeletSilence
	refusedMu sync.Mutex
	refused   bool // the last probe was refused (warned once per spell)
}

// Prober asks the kubelet whether it answers, within ctx's deadline: one
// of the Healthz* results. *Healthz is the real one.
type Prober interface {
	Probe(ctx context.Context) string
}

// Run reads and probes until ctx ends.
func (w *Watch) Run(ctx context.Context, emit func(observations.Input)) {
	grace := GraceFor(ctx, w.Client, w.Grace)
	klog.InfoS("Watching the node Lease", "node", w.Node, "grace", grace, "period", w.Period, "idlePeriod", w.idlePeriod(),
		"healthzPeriod", w.HealthzPeriod)
	st := newInputState(emit, w.Clock)
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	if w.Healthz != nil {
		w.probeOnce(ctx, st) // the first read knows whether the kubelet answers
		go func() { defer close(done); w.probe(ctx, st, wake) }()
	} else {
		close(done)
	}
	w.read(ctx, NewObserver(w.Client, Config{Node: w.Node, Grace: grace}, w.Clock), st, wake)
	cancel()
	<-done
}

// read reads the Lease, then waits for the next read's time or a wake.
func (w *Watch) read(ctx context.Context, obs *Observer, st *inputState, wake <-chan struct{}) {
	failures, nudged := 0, false
	var lastNudge time.Time
	for {
		rctx, cancel := context.WithTimeout(ctx, w.Period)
		o := obs.Read(rctx, w.Metrics)
		cancel()
		if ctx.Err() != nil {
			return
		}
		failures = failuresAfter(failures, o)
		healthz, o := st.leaseRead(o)
		next := w.nextRead(o, failures, healthz)
		if nudged {
			next = w.untilLate(o, next)
		}
		var ok bool
		if nudged, ok = w.wait(ctx, next, wake, &lastNudge); !ok {
			return
		}
	}
}

// wait waits d, or for a wake, or for a nudge past IdlePeriod since the
// last one taken (lastNudge); it says whether a nudge ended it, and false
// for ok once ctx ends.
func (w *Watch) wait(ctx context.Context, d time.Duration, wake <-chan struct{}, lastNudge *time.Time) (nudged, ok bool) {
	t := w.Clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-t.C():
			return false, true
		case <-wake:
			return false, true
		case <-w.Nudge:
			if now := w.Clock.Now(); lastNudge.IsZero() || now.Sub(*lastNudge) >= w.idlePeriod() {
				*lastNudge = now
				klog.InfoS("The kubelet's PUTs to the API server are failing (its rest_client_requests_total); reading its Lease now", "node", w.Node)
				return true, true
			}
		}
	}
}

// untilLate is the wait after a nudged read found o: no longer than next,
// and, while the Lease is not yet 2 renewals late, until it would be (so
// a second read tells), but not under Period.
func (w *Watch) untilLate(o Observation, next time.Duration) time.Duration {
	if !o.Readable || !o.Found || o.MissedRenewals() >= lateRenewals {
		return next
	}
	return min(next, max(w.Period, time.Duration(lateRenewals)*o.RenewInterval-o.RenewAge+time.Second))
}

// probe asks the kubelet's /healthz every HealthzPeriod, and wakes the
// reader when the kubelet stops answering 200.
func (w *Watch) probe(ctx context.Context, st *inputState, wake chan<- struct{}) {
	t := w.Clock.NewTicker(w.HealthzPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if w.probeOnce(ctx, st) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// probeOnce asks /healthz once, times the kubelet's silence, and says
// whether the kubelet just stopped answering 200 (false once ctx ended).
func (w *Watch) probeOnce(ctx context.Context, st *inputState) bool {
	start := w.Clock.Now()
	h := w.Healthz.Probe(ctx)
	if ctx.Err() != nil {
		return false
	}
	w.silence.probed(start, h)
	w.noteRefused(h)
	w.Metrics.probed(h)
	return st.probed(h)
}

// noteRefused warns once when the health port starts refusing: the Lease
// is then read as if there were no health probe (nextRead), and
// hangwatch_kubelet_healthz_refused says so.
func (w *Watch) noteRefused(h string) {
	w.refusedMu.Lock()
	defer w.refusedMu.Unlock()
	refused := h == HealthzRefused
	if refused && !w.refused {
		klog.InfoS("Warning: the kubelet's local /healthz refuses connections (healthzPort 0, another port, or no kubelet); "+
			"its Lease is read every idle period while it renews on time, and the kubelet is not restarted", "node", w.Node, "url", w.healthzURL())
	}
	w.refused = refused
	w.Metrics.refusedProbe(refused)
}

func (w *Watch) healthzURL() string {
	if h, ok := w.Healthz.(*Healthz); ok {
		return h.URL
	}
	return ""
}

// KubeletUnanswered is how long the kubelet's /healthz has given no
// answer at all: since the first probe that timed out after its last
// answer, on the watch's clock; 0 while it answers (any status) or
// refuses (nothing listens: not a hang), or before it is probed.
func (w *Watch) KubeletUnanswered() time.Duration {
	return w.silence.since(w.Clock.Now())
}

// nextRead is how long until the next Lease read after reading o, the
// failures-th failed read in a row (0 after a good one), with the
// kubelet's last probe result healthz.
//
// Only a kubelet that does not answer on the node has its Lease read every
// Period, to time the grace period: that is this node's trouble. The rest
// may be the whole fleet's at once, an API server that is down or
// overloaded, so reads back off from it: a failed read doubles the wait up
// to IdlePeriod, and a Lease held late while the kubelet answers is read
// every IdlePeriod.
func (w *Watch) nextRead(o Observation, failures int, healthz string) time.Duration {
	idle := w.idlePeriod()
	late := o.RenewAge > o.RenewInterval+o.RenewInterval/2
	switch {
	case healthz == HealthzRefused && o.Readable && o.Found && !late:
		// nothing listens on the health port: read at the idle pace while
		// the Lease is renewed on time (a refusing port on a healthy node
		// is no reason to read every period); failed reads back off below
		return idle
	case healthz == HealthzRefused && !o.Readable:
		return min(w.Period<<min(failures, 16), idle)
	case !answering(healthz):
		return w.Period
	case !o.Readable:
		return min(w.Period<<min(failures, 16), idle)
	case o.LateWhileAnswering, o.Found && !late && healthz == HealthzOK:
		return idle
	}
	return w.Period
}

func failuresAfter(before int, o Observation) int {
	if o.Readable {
		return 0
	}
	return before + 1
}

func (w *Watch) idlePeriod() time.Duration {
	if w.Healthz == nil || w.IdlePeriod < w.Period {
		return w.Period
	}
	return w.IdlePeriod
}

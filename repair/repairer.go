package repair

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// tick is how often the repairer looks at the verdicts.
const tick = time.Second

// settleProbes is how many observations of the target's signal must be
// judged after a restart before the hang is timed again: one whose calls
// may have gone out before the kill, and one sent after it.
const settleProbes = 2

// Notifier tells people what repair did: Events on the Node.
type Notifier interface {
	Normal(reason, message string)
	Warning(reason, message string)
}

// Options are what a Repairer reads and acts through.
type Options struct {
	Settings Settings
	Clock    clock.WithTicker
	// Verdicts are the node's conditions as the agent holds them.
	Verdicts func() []Verdict
	// Progress counts the judged observations of each target's signal:
	// CRI beats and cycles for the runtime, Lease reads with their kubelet
	// health probe for the kubelet.
	Progress map[Target]func() uint64
	// CRISocket is the runtime's socket, whose listener names its unit
	// when Settings.RuntimeUnit is empty.
	CRISocket string
	// Dial connects to systemd; nil: DialSystemd.
	Dial func(ctx context.Context, path string) (Manager, error)
	// Proc reads processes; the zero value: HostProc.
	Proc    Procfs
	Metrics *Metrics
	Notify  Notifier
}

// Repairer restarts a target that has been unwell for its time, within
// the guards.
type Repairer struct {
	o     Options
	start time.Time

	mu       sync.Mutex
	settings Settings
	targets  map[Target]*targetState
}

// targetState is one target's episode and budget.
type targetState struct {
	since    time.Time   // when this process saw the current unwell spell start (zero: well)
	judged   time.Time   // the last attempt, whatever its outcome: no spell is timed from before it
	settleAt uint64      // after a restart: the probe count to reach before judging again
	told     string      // what was last told in this spell, so a repeat is not told again
	restarts []time.Time // restarts (and dry runs) of the last hour
}

// New returns a Repairer; nothing happens until Run.
func New(o Options) *Repairer {
	if o.Dial == nil {
		o.Dial = DialSystemd
	}
	if o.Proc.Root == "" {
		o.Proc = HostProc
	}
	r := &Repairer{o: o, settings: o.Settings,
		targets: map[Target]*targetState{TargetRuntime: {}, TargetKubelet: {}}}
	if o.Clock != nil {
		r.start = o.Clock.Now()
	}
	for t := range r.targets {
		o.Metrics.budget(t, o.Settings.MaxRestartsPerHour)
	}
	return r
}

// Update applies reloaded settings. Turning repair off stops it at once.
func (r *Repairer) Update(s Settings) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settings != s {
		klog.InfoS("Repair settings reloaded", "enabled", s.Enabled, "dryRun", s.DryRun,
			"restartRuntimeAfter", s.RestartRuntimeAfter, "restartKubeletAfter", s.RestartKubeletAfter)
	}
	r.settings = s
}

// Run looks at the verdicts every second until ctx ends.
func (r *Repairer) Run(ctx context.Context) {
	t := r.o.Clock.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.Step(ctx)
		}
	}
}

// Step judges each target once.
func (r *Repairer) Step(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now, vs := r.o.Clock.Now(), r.o.Verdicts()
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		if reason, due := r.due(t, now, vs); due {
			r.attempt(ctx, attempt{target: t, reason: reason, now: now, deadlock: deadlocked(vs)})
		}
	}
}

// due tells whether target has been unwell, as a restart cures, for its
// time, and it may be judged.
func (r *Repairer) due(t Target, now time.Time, vs []Verdict) (string, bool) {
	st, after := r.targets[t], r.settings.after(t)
	v, sick := unwell(t, vs)
	if !sick || after <= 0 {
		st.since, st.settleAt, st.told = time.Time{}, 0, ""
		return "", false
	}
	if st.settleAt > 0 {
		if r.progress(t) < st.settleAt {
			return "", false // the restart's result is not in yet
		}
		st.settleAt, st.since = 0, now // still unwell: judged afresh from here
	}
	if st.since.IsZero() {
		// from when it turned True, but not before this process started
		// (a condition restored from the Node is not its own sight), nor
		// before the last attempt: a reason that changed for a moment
		// after a restart does not make the next one due at once
		st.since = latest(latest(v.Since, r.start), st.judged)
	}
	if now.Sub(st.since) < after || now.Sub(r.start) < StartupGrace {
		return "", false
	}
	return v.Reason, true
}

func (r *Repairer) progress(t Target) uint64 {
	if p := r.o.Progress[t]; p != nil {
		return p()
	}
	return 0
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

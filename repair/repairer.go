package repair

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/nodelink"
)

// tick is how often the repair process reads the view and judges it
// (AgentLink.Run).
const tick = time.Second

// youngTimes is how many of a target's waits its main process must have
// run before it may be killed: a runtime an operator has just restarted or
// upgraded, or that systemd has just started again, is given time to come
// up, however slowly it first answers.
const youngTimes = 3

// Options are what a Repairer reads and acts through.
type Options struct {
	Settings Settings
	Clock    clock.WithTicker
	// Conditions are the node's conditions as the agent holds them.
	Conditions func() []nodelink.Condition
	// Unanswered times each target's silence on the agent's clock: for the
	// runtime, the calls that judge it as a whole (nodelink.WholeRuntimeCalls); for
	// the kubelet, its local /healthz. A target without one is never
	// restarted.
	Unanswered map[Target]nodelink.Silence
	// Maintenance names the Node's condition that says an administrator is
	// at work (MaintenanceConditions), read fresh before an attempt; "":
	// none, or the API server could not say (a node cut off from it may
	// still heal itself). nil: never asked.
	Maintenance func(ctx context.Context) (string, error)
	// Fleet, when set, is asked for a slot before each kill: the bound on
	// restarts across the fleet. nil: this node decides alone.
	Fleet FleetBound
	// CRISocket is the runtime's socket: its listener must be the runtime
	// unit's main process, and names the unit when Settings.RuntimeUnit is
	// empty.
	CRISocket string
	// KubeletHealthzPort is the kubelet's health port: its listener must
	// be in the kubelet's unit. 0: the kubelet is never restarted.
	KubeletHealthzPort int
	// Boot reads the node's boot ID and time since boot, that the budget
	// is counted on; nil: HostBoot.
	Boot BootClock
	// Dial connects to systemd; nil: DialSystemd.
	Dial func(ctx context.Context, path string) (Manager, error)
	// Proc reads processes; the zero value: HostProc.
	Proc    Procfs
	Metrics *Metrics
	Notify  nodelink.Notifier
}

// FleetBound is the restart budget shared by the fleet: Acquire says
// whether this node may restart target now, and if not, why; an error
// means the bound could not be consulted (the API server does not answer),
// and the node's own budget then decides alone.
type FleetBound interface {
	Acquire(ctx context.Context, t Target, fs FleetSettings) (ok bool, why string, err error)
}

// Repairer restarts a target that has given no answer for its time, within
// the guards.
type Repairer struct {
	o Options

	mu        sync.Mutex
	settings  Settings
	budget    *Budget
	budgetErr error // the state file could not be read: every attempt is refused
	targets   map[Target]*targetState
	gaveUp    map[Target]bool // what GivenUp said when Step last logged it
}

// targetState is one target's spell: from the first unanswered call
// while its condition says it is unwell, until it answers (or the
// condition clears).
type targetState struct {
	judged time.Time // the last attempt, whatever its outcome: no silence is timed from before it
	askAt  time.Time // held back by the fleet's bound: not judged again before this
	told   string    // what was last told in this spell, so a repeat is not told again
	young  bool      // waiting for a young main process has been logged in this spell
	// outcome is the last attempt's in this spell ("" before any).
	outcome string
	// killed is when this spell's first kill was sent (zero: none yet).
	killed time.Time
	// cannot says why the last attempt showed repair impossible on this
	// node; held, why it was held back without showing that ("" if not).
	cannot, held string
}

// New returns a Repairer; nothing happens until Step.
func New(o Options) *Repairer {
	if o.Dial == nil {
		o.Dial = DialSystemd
	}
	if o.Proc.Root == "" {
		o.Proc = HostProc
	}
	if o.Boot == nil {
		o.Boot = HostBoot
	}
	r := &Repairer{o: o, settings: o.Settings,
		targets: map[Target]*targetState{TargetRuntime: {}, TargetKubelet: {}}, gaveUp: map[Target]bool{}}
	r.budget, r.budgetErr = r.openBudget(o.Settings.StateFile)
	if r.budgetErr != nil {
		if o.Settings.Enabled {
			klog.ErrorS(r.budgetErr, "Repair refuses to act: its budget cannot be read")
		}
	}
	for t := range r.targets {
		o.Metrics.budget(t, o.Settings.MaxRestartsPerHour-r.usedNow(t))
	}
	return r
}

func (r *Repairer) openBudget(path string) (*Budget, error) {
	var wall clock.PassiveClock
	if r.o.Clock != nil {
		wall = r.o.Clock
	}
	return OpenBudget(path, r.o.Boot, wall)
}

func (r *Repairer) usedNow(t Target) int {
	now, err := r.o.Boot()
	if err != nil {
		return 0
	}
	return r.budget.Used(t, now)
}

// Update applies reloaded settings. Turning repair off stops it at once.
func (r *Repairer) Update(s Settings) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settings != s {
		klog.InfoS("Repair settings reloaded", "enabled", s.Enabled, "dryRun", s.DryRun,
			"restartRuntimeAfter", s.RestartRuntimeAfter, "restartKubeletAfter", s.RestartKubeletAfter)
	}
	if s.StateFile != r.settings.StateFile {
		r.budget, r.budgetErr = r.openBudget(s.StateFile)
	}
	r.settings = s
}

// Step judges each target once.
func (r *Repairer) Step(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now, vs := r.o.Clock.Now(), r.o.Conditions()
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		if a, due := r.due(t, now, vs); due {
			a.deadlock = nodelink.KernelDeadlocked(vs)
			r.attempt(ctx, a)
		}
		r.logGivenUp(t)
	}
}

// logGivenUp logs each change of what GivenUp says of t, so the log shows
// when the next rung was let act, and why.
func (r *Repairer) logGivenUp(t Target) {
	up, why := r.givenUp(t)
	r.o.Metrics.gaveUp(t, up)
	if up == r.gaveUp[t] {
		return
	}
	r.gaveUp[t] = up
	if up {
		klog.InfoS("Repair has given up; the next rung may act", "target", t, "why", why)
		return
	}
	klog.InfoS("Repair has not given up; the next rung waits", "target", t, "why", why)
}

// due tells whether target has given no answer at all for its time while
// its condition says it is unwell as a restart cures. The silence is timed
// on the agent's clock from the call (or probe) that went unanswered,
// never from the condition's transition, and never from before the last
// attempt; any answer, however late, starts it again.
func (r *Repairer) due(t Target, now time.Time, vs []nodelink.Condition) (attempt, bool) {
	st, after := r.targets[t], r.settings.after(t)
	v, sick := unwell(t, vs)
	what, silent := r.silence(t)
	// After a kill, a restarted runtime whose socket nothing listens on
	// again (a start that wedges or fails before it serves) refuses each
	// call at once, which the silence counts as an answer. So the spell
	// lasts, for a wait after the kill, whatever the agent says (its
	// verdict lags its probes, and it has been seen to judge the runtime
	// responsive for one cycle as the killed one's calls ended), and
	// after that while RuntimeHung is True for RuntimeUnreachable. Nothing
	// listening is not killed again (starting it is systemd's), and repair
	// gives up a wait after the kill.
	held := t == TargetRuntime && !st.killed.IsZero() &&
		(r.o.Clock.Since(st.killed) < after || nodelink.RuntimeUnreachable(vs))
	if after <= 0 || (!sick && !held) || (silent <= 0 && !held) {
		*st = targetState{judged: st.judged, askAt: st.askAt} // the spell is over
		return attempt{}, false
	}
	if !sick || silent <= 0 {
		return attempt{}, false
	}
	since := latest(now.Add(-silent), st.judged)
	if now.Sub(since) < after || now.Before(st.askAt) {
		return attempt{}, false
	}
	return attempt{target: t, reason: v.Reason, what: what, now: now, age: now.Sub(since).Round(time.Second)}, true
}

func (r *Repairer) silence(t Target) (string, time.Duration) {
	if f := r.o.Unanswered[t]; f != nil {
		return f()
	}
	return "", 0
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// GivenUp tells whether repair has done what it can for target in this
// spell, so the next rung (the fence) may act, and why either way. It is
// true only when:
//   - repair is off for the target (repair.enabled false, or its
//     restart...After 0): the next rung acts without it;
//   - repair is impossible on this node: the last attempt found the
//     target cannot be restarted here (a process in D state,
//     KernelDeadlock, a KillMode that would kill the containers, no
//     systemd or no such unit, a Restart= or exit status that keeps it
//     down, a main process that is not the one that hangs, hangwatch
//     outside the host's PID namespace), or its budget is spent by kills
//     made in the last hour of this boot that did not hold;
//   - a kill was sent in this spell and the target has given no answer
//     for a wait since the first (a runtime whose socket nothing listens
//     on again after the restart included).
//
// Never while it is held back without having tried: the fleet's bound,
// the Node's maintenance, a budget that cannot be read or written, a kill
// never sent, systemd not answering, a young main process, no attempt
// yet; nor in dry run, where no restart is ever made (turn repair off to
// let the next rung act without it).
func (r *Repairer) GivenUp(t Target) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.givenUp(t)
}

// Restarted tells whether repair has restarted target in this spell.
func (r *Repairer) Restarted(t Target) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.targets[t].killed.IsZero()
}

func (r *Repairer) givenUp(t Target) (bool, string) {
	st, after := r.targets[t], r.settings.after(t)
	switch {
	case after <= 0:
		return true, "repair is off for the " + t
	case r.settings.DryRun:
		return false, "repair is in dry run: no restart of the " + t + " is made, so none has been tried (turn repair off to let the next rung act without it)"
	case !st.killed.IsZero() && r.o.Clock.Since(st.killed) >= after:
		return true, fmt.Sprintf("repair restarted the %s %s ago in this spell and it has given no answer since", t, r.o.Clock.Since(st.killed).Round(time.Second))
	case st.cannot != "":
		return true, "repair cannot restart the " + t + " on this node: " + st.cannot
	case !st.killed.IsZero():
		return false, fmt.Sprintf("repair restarted the %s %s ago; it is given %s to answer", t, r.o.Clock.Since(st.killed).Round(time.Second), after)
	case st.held != "":
		return false, "repair has not restarted the " + t + " yet: " + st.held
	}
	return false, "repair has not restarted the " + t + " yet (last attempt: " + or(st.outcome, "none") + ")"
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

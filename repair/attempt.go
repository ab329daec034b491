package repair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// systemdTimeout bounds each exchange with systemd, so a wedged systemd
// cannot hold the repairer.
const systemdTimeout = 5 * time.Second

// attempt is one decision about one target.
type attempt struct {
	target   Target
	reason   string // the condition's reason
	what     string // what went unanswered: a CRI method, /healthz
	now      time.Time
	age      time.Duration // how long it has given no answer
	deadlock bool
}

// found is the unit to kill and its main process on this side.
type found struct {
	unit Unit
	pid  int // in hangwatch's PID namespace
}

// errYoung is a main process too young to be killed: not an attempt, a
// wait.
var errYoung = errors.New("main process too young")

// attempt applies the guards in order, then kills the unit's main
// process. A spell that is not cured is judged again a whole wait later.
func (r *Repairer) attempt(ctx context.Context, a attempt) {
	st := r.targets[a.target]
	r.budgetErr = r.budget.Refresh() // a file fixed or removed is read again
	used := r.budget.Used(a.target, a.now)
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-used)
	switch {
	case r.budgetErr != nil:
		r.judged(a, OutcomeRefused, fmt.Sprintf("%s not restarted: its restart budget cannot be kept: %v", a.target, r.budgetErr))
		return
	case used >= r.settings.MaxRestartsPerHour:
		r.judged(a, OutcomeBudgetSpent, fmt.Sprintf("%s not restarted: it was restarted %d times in the last hour on this node, dry runs included (repair.maxRestartsPerHour, kept in %s across hangwatch's restarts), so the next rung (eviction, reboot or fencing) is left to act", a.target, used, r.stateFileName()))
		return
	case a.deadlock:
		r.judged(a, OutcomeImpossible, fmt.Sprintf("%s not restarted: KernelDeadlock is True, so a kill cannot complete", a.target))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, systemdTimeout)
	defer cancel()
	m, f, err := r.locate(ctx, a.target, a.now)
	switch {
	case errors.Is(err, errYoung):
		if !st.young {
			st.young = true
			klog.InfoS("Repair waits: the main process is younger than its wait allows", "target", a.target, "detail", err)
		}
		return
	case err != nil:
		outcome := OutcomeRefused
		if errors.Is(err, errUninterruptible) {
			outcome = OutcomeImpossible
		}
		r.judged(a, outcome, fmt.Sprintf("%s not restarted: %v", a.target, err))
		return
	}
	defer m.Close()
	// the API server is asked last, only for a kill every local check allows
	if r.standAside(ctx, a) || r.fleetRefuses(ctx, a) {
		return
	}
	r.restart(ctx, a, m, f)
}

// judged tells an outcome that made no restart, and times the next
// silence from now.
func (r *Repairer) judged(a attempt, outcome, detail string) {
	r.targets[a.target].judged = a.now
	r.tell(a, outcome, detail)
}

// standAside tells whether the Node says an administrator is at work
// (MaintenanceConditions): repair then does not act, and says so once.
func (r *Repairer) standAside(ctx context.Context, a attempt) bool {
	if r.o.Maintenance == nil {
		return false
	}
	cond, err := r.o.Maintenance(ctx)
	if err != nil {
		klog.InfoS("Could not read the Node's maintenance conditions; repair goes on within this node's budget", "err", err)
		return false
	}
	if cond == "" {
		return false
	}
	r.judged(a, OutcomeStoodAside, fmt.Sprintf("%s not restarted: the Node's %s is True, so an administrator is at work", a.target, cond))
	return true
}

// fleetRefuses tells whether the fleet's bound holds this restart back.
func (r *Repairer) fleetRefuses(ctx context.Context, a attempt) bool {
	if r.o.Fleet == nil || r.settings.DryRun || r.settings.Fleet.MaxRestarts <= 0 {
		return false
	}
	ok, why, err := r.o.Fleet.Acquire(ctx, a.target, r.settings.Fleet)
	if err != nil {
		klog.InfoS("The fleet's repair bound could not be consulted; this node's own budget decides", "target", a.target, "err", err)
		return false
	}
	if ok {
		return false
	}
	r.judged(a, OutcomeFleetBound, fmt.Sprintf("%s not restarted: %s; it asks again in %s", a.target, why, fleetRetry))
	// asked again a fleetRetry later, not a wait later: each ask reads
	// the slots, and a fleet-wide hang is many nodes asking
	r.targets[a.target].askAt = a.now.Add(fleetRetry)
	return true
}

// fleetRetry is how long a node held back by the fleet's bound waits
// before it asks again.
const fleetRetry = time.Minute

// restart records the attempt in the budget, then kills the unit's main
// process (or, in a dry run, says it would). The attempt counts whatever
// systemd answers: a kill whose answer timed out may have been made.
func (r *Repairer) restart(ctx context.Context, a attempt, m Manager, f found) {
	st := r.targets[a.target]
	st.judged = a.now
	if err := r.budget.Record(a.target, a.now); err != nil {
		r.tell(a, OutcomeRefused, fmt.Sprintf("%s not restarted: its restart budget cannot be kept: %v", a.target, err))
		return
	}
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-r.budget.Used(a.target, a.now))
	what := fmt.Sprintf("%s (SIGKILL to its main process, PID %d, the listener of %s; Restart=%s starts it again)", f.unit.Name, f.pid, r.listenerOf(a.target), f.unit.Restart)
	switch {
	case r.settings.DryRun:
		r.tell(a, OutcomeDryRun, "dry run: would restart "+what)
	default:
		if err := m.KillMain(ctx, f.unit.Name); err != nil {
			r.tell(a, OutcomeFailed, fmt.Sprintf("restart of %s failed (counted in the budget: the kill may have been made): %v", f.unit.Name, err))
			return
		}
		r.tell(a, OutcomeRestarted, "restarted "+what)
	}
	st.told, st.young = "", false // a spell after the restart is news again
}

func (r *Repairer) stateFileName() string {
	if r.settings.StateFile == "" {
		return "memory"
	}
	return r.settings.StateFile
}

func (r *Repairer) listenerOf(t Target) string {
	if t == TargetKubelet {
		return fmt.Sprintf("the health port %d", r.o.KubeletHealthzPort)
	}
	return r.runtimeSocket()
}

var errUninterruptible = errors.New("in uninterruptible sleep")

// locate connects to systemd and finds the target's unit, checking that
// it is the one that hangs, that systemd will start it again, that its
// main process can be killed and is not young (at now; zero: not
// checked). The Manager is returned open on success.
func (r *Repairer) locate(ctx context.Context, t Target, now time.Time) (Manager, found, error) {
	m, err := r.o.Dial(ctx, r.settings.SystemdSocket)
	if err != nil {
		return nil, found{}, err
	}
	f, err := r.find(ctx, m, t, now)
	if err != nil {
		m.Close()
		return nil, f, err
	}
	return m, f, nil
}

func (r *Repairer) find(ctx context.Context, m Manager, t Target, now time.Time) (found, error) {
	var f found
	sdPID, err := PeerPID(r.settings.SystemdSocket, systemdTimeout)
	if err == nil && sdPID == 0 {
		err = errors.New("systemd is outside hangwatch's PID namespace (run with hostPID)")
	}
	if err != nil {
		return f, err
	}
	listener, name, err := r.unitName(ctx, m, t, sdPID)
	if err != nil {
		return f, err
	}
	if f.unit, err = m.Unit(ctx, name); err != nil {
		return f, err
	}
	if err := restartable(f.unit); err != nil {
		return f, err
	}
	if f.pid, err = r.o.Proc.FromNamespaceOf(int(f.unit.MainPID), sdPID); err != nil {
		return f, err
	}
	if err := r.isTheOneThatHangs(ctx, m, t, f, listener, sdPID); err != nil {
		return f, err
	}
	if tid, inD, err := r.o.Proc.ThreadInD(f.pid); err != nil || inD {
		if err != nil {
			return f, err
		}
		return f, fmt.Errorf("thread %d of the main process of %s (PID %d) is %w (D): a kill cannot complete", tid, name, f.pid, errUninterruptible)
	}
	return f, r.oldEnough(t, f.unit, now)
}

// restartable checks that systemd will start the unit again after a
// SIGKILL of its main process, and that it has one.
func restartable(u Unit) error {
	switch {
	case u.KillKeepsItDown != "":
		return fmt.Errorf("unit %s has %s, so systemd would not start it again after a SIGKILL", u.Name, u.KillKeepsItDown)
	case !u.WillRestart():
		return fmt.Errorf("unit %s has Restart=%s, so systemd would not start it again", u.Name, u.Restart)
	case u.MainPID == 0:
		return fmt.Errorf("unit %s has no main process (%s)", u.Name, u.ActiveState)
	}
	return nil
}

// oldEnough refuses, as a wait (errYoung), a main process younger than
// youngTimes the target's wait: an operator's restart or upgrade, or
// systemd's own restart, is given time to come up.
func (r *Repairer) oldEnough(t Target, u Unit, now time.Time) error {
	limit := youngTimes * r.settings.after(t)
	if now.IsZero() || u.MainStarted.IsZero() || limit <= 0 {
		return nil
	}
	if age := now.Sub(u.MainStarted); age < limit {
		return fmt.Errorf("%w: %s's main process started %s ago, under %s (%d times the wait)", errYoung, u.Name, age.Round(time.Second), limit, youngTimes)
	}
	return nil
}

// tell logs, counts and tells an outcome once per spell: the same detail
// found again a wait later is not news.
func (r *Repairer) tell(a attempt, outcome, detail string) {
	st := r.targets[a.target]
	if st.told == outcome+detail {
		return
	}
	st.told, st.outcome = outcome+detail, outcome
	message := fmt.Sprintf("%s; %s, and %s unanswered for %s", detail, a.reason, a.what, a.age)
	r.o.Metrics.count(a.target, outcome)
	reason := eventReason(a.target, outcome)
	if outcome == OutcomeRestarted || outcome == OutcomeDryRun {
		klog.InfoS("Repair", "target", a.target, "outcome", outcome, "message", message)
		r.o.Notify.Normal(reason, "hangwatch "+message)
		return
	}
	klog.InfoS("Repair not made", "target", a.target, "outcome", outcome, "message", message)
	r.o.Notify.Warning(reason, "hangwatch: "+message)
}

// eventReason is the Event's reason for an outcome.
func eventReason(t Target, outcome string) string {
	switch outcome {
	case OutcomeRestarted:
		if t == TargetKubelet {
			return "KubeletRestarted"
		}
		return "RuntimeRestarted"
	case OutcomeDryRun:
		return "RepairDryRun"
	case OutcomeImpossible:
		return "RepairImpossible"
	case OutcomeBudgetSpent:
		return "RepairBudgetSpent"
	case OutcomeFailed:
		return "RepairFailed"
	case OutcomeStoodAside:
		return "RepairStoodAside"
	case OutcomeFleetBound:
		return "RepairFleetBound"
	}
	return "RepairRefused"
}

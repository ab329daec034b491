package repair

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"k8s.io/klog/v2"
)

// attempt is one decision about one target.
type attempt struct {
	target   Target
	reason   string // the condition's reason
	what     string // what went unanswered: a CRI method, /healthz
	now      time.Time
	boot     Boot          // now on the boot clock, that the budget counts on
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
// Each step has a deadline of its own (deadline.go).
func (r *Repairer) attempt(ctx context.Context, a attempt) {
	if r.budgetRefuses(&a) {
		return
	}
	if a.deadlock {
		r.impossible(a, OutcomeImpossible, fmt.Sprintf("%s not restarted: KernelDeadlock is True, so a kill cannot complete", a.target))
		return
	}
	lctx, cancel := withDeadline(ctx, r.o.Clock, systemdTimeout, "the checks through systemd")
	m, f, err := r.locate(lctx, a.target, a.now)
	cancel()
	if err != nil {
		r.notLocated(a, err)
		return
	}
	defer m.Close()
	// the API server is asked last, only for a kill every local check allows
	if r.standAside(ctx, a) || r.fleetRefuses(ctx, a) {
		return
	}
	r.restart(ctx, a, m, f)
}

// budgetRefuses reads the budget again and tells whether it holds the
// attempt back: unreadable (not given up: nothing was tried), or spent.
func (r *Repairer) budgetRefuses(a *attempt) bool {
	r.budgetErr = r.budget.Refresh() // a file fixed or removed is read again
	if r.budgetErr == nil {
		if a.boot, r.budgetErr = r.o.Boot(); r.budgetErr != nil {
			r.budgetErr = fmt.Errorf("the budget is counted by boot: %w", r.budgetErr)
		}
	}
	if r.budgetErr != nil {
		r.judged(*a, OutcomeRefused, fmt.Sprintf("%s not restarted: its restart budget cannot be kept: %v", a.target, r.budgetErr))
		return true
	}
	used := r.budget.Used(a.target, a.boot)
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-used)
	if used < r.settings.MaxRestartsPerHour {
		return false
	}
	detail := fmt.Sprintf("%s not restarted: it was restarted %d times in the last hour of this boot on this node, dry runs included (repair.maxRestartsPerHour, kept in %s across hangwatch's restarts), so the next rung (eviction, reboot or fencing) is left to act", a.target, used, r.stateFileName())
	if r.budget.Kills(a.target, a.boot) > 0 {
		r.impossible(*a, OutcomeBudgetSpent, detail) // restarts were made and did not hold
	} else {
		r.judged(*a, OutcomeBudgetSpent, detail) // dry runs alone: nothing was tried
	}
	return true
}

// notLocated judges an attempt whose checks through systemd refused or
// could not be made: a young main process is a wait, not an attempt.
func (r *Repairer) notLocated(a attempt, err error) {
	st := r.targets[a.target]
	detail := fmt.Sprintf("%s not restarted: %v", a.target, err)
	switch {
	case errors.Is(err, errYoung):
		if !st.young {
			st.young = true
			klog.InfoS("Repair waits: the main process is younger than its wait allows", "target", a.target, "detail", err)
		}
	case errors.Is(err, errUninterruptible), errors.Is(err, errKillMode):
		r.impossible(a, OutcomeImpossible, detail)
	case isSetup(err):
		r.impossible(a, OutcomeRefused, detail)
	default:
		r.judged(a, OutcomeRefused, detail)
	}
}

// judged tells an outcome that made no restart and did not show repair
// impossible on this node (it was held back), and times the next silence
// from now.
func (r *Repairer) judged(a attempt, outcome, detail string) {
	st := r.targets[a.target]
	st.judged, st.held, st.cannot = a.now, detail, ""
	r.tell(a, outcome, detail)
}

// impossible tells an outcome that shows repair cannot restart the
// target on this node: the node's setup, the kernel, or a budget spent by
// restarts that did not hold. The next rung may act (GivenUp).
func (r *Repairer) impossible(a attempt, outcome, detail string) {
	st := r.targets[a.target]
	st.judged, st.held, st.cannot = a.now, "", detail
	r.tell(a, outcome, detail)
}

// standAside tells whether the Node says an administrator is at work
// (MaintenanceConditions): repair then does not act, and says so once.
// The read has a deadline of its own: a slow API server is taken as
// silent, and repair goes on.
func (r *Repairer) standAside(ctx context.Context, a attempt) bool {
	if r.o.Maintenance == nil {
		return false
	}
	ctx, cancel := withDeadline(ctx, r.o.Clock, maintenanceTimeout, "the maintenance read")
	defer cancel()
	cond, err := r.o.Maintenance(ctx)
	if err != nil {
		klog.InfoS("Could not read the Node's maintenance conditions; repair goes on within this node's budget", "err", cause(ctx, err))
		return false
	}
	if cond == "" {
		return false
	}
	r.judged(a, OutcomeStoodAside, fmt.Sprintf("%s not restarted: the Node's %s is True, so an administrator is at work", a.target, cond))
	return true
}

// fleetRefuses tells whether the fleet's bound holds this restart back.
// The ask has a deadline of its own; past it this node's budget decides.
func (r *Repairer) fleetRefuses(ctx context.Context, a attempt) bool {
	if r.o.Fleet == nil || r.settings.DryRun || r.settings.Fleet.MaxRestarts <= 0 {
		return false
	}
	ctx, cancel := withDeadline(ctx, r.o.Clock, fleetTimeout, "the fleet's bound")
	defer cancel()
	ok, why, err := r.o.Fleet.Acquire(ctx, a.target, r.settings.Fleet)
	if err != nil {
		klog.InfoS("The fleet's repair bound could not be consulted; this node's own budget decides", "target", a.target, "err", cause(ctx, err))
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
// process (or, in a dry run, says it would), with a deadline of its own.
// The attempt counts whatever systemd answers: a kill whose answer timed
// out may have been made. A kill that was never sent is taken out of the
// budget again, and is not a restart made.
func (r *Repairer) restart(ctx context.Context, a attempt, m Manager, f found) {
	st := r.targets[a.target]
	what := fmt.Sprintf("%s (SIGKILL to its main process, PID %d, the listener of %s; Restart=%s starts it again; KillMode=%s)", f.unit.Name, f.pid, r.listenerOf(a.target), f.unit.Restart, f.unit.KillMode)
	if r.settings.DryRun {
		if _, ok := r.record(a, true); ok {
			r.told(a, OutcomeDryRun, "dry run: would restart "+what)
			st.told, st.young = "", false // a spell after it is news again
		}
		return
	}
	if err := ctx.Err(); err != nil {
		r.notSent(a, fmt.Errorf("%w: %w", ErrKillNotSent, err))
		return
	}
	e, ok := r.record(a, false)
	if !ok {
		return
	}
	kctx, cancel := withDeadline(ctx, r.o.Clock, killTimeout, "the kill")
	defer cancel()
	err := m.KillMain(kctx, f.unit.Name)
	switch {
	case errors.Is(err, ErrKillNotSent):
		r.forget(a, e)
		r.notSent(a, err)
		return
	case st.killed.IsZero():
		st.killed = r.o.Clock.Now() // when it was sent, after the reads' time
	}
	if err != nil {
		r.told(a, OutcomeFailed, fmt.Sprintf("restart of %s failed (counted in the budget: the kill may have been made): %v", f.unit.Name, err))
		return
	}
	r.told(a, OutcomeRestarted, "restarted "+what)
	st.told, st.young = "", false // a spell after the restart is news again
}

// record writes the attempt into the budget before its kill; false: it
// could not be kept, and nothing is sent.
func (r *Repairer) record(a attempt, dryRun bool) (budgetEntry, bool) {
	st := r.targets[a.target]
	st.judged = a.now
	e, err := r.budget.Record(a.target, a.boot, dryRun)
	if err != nil {
		r.judged(a, OutcomeRefused, fmt.Sprintf("%s not restarted: its restart budget cannot be kept: %v", a.target, err))
		return e, false
	}
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-r.budget.Used(a.target, a.boot))
	return e, true
}

// forget takes a kill never sent out of the budget.
func (r *Repairer) forget(a attempt, e budgetEntry) {
	if err := r.budget.Forget(a.target, e); err != nil {
		klog.ErrorS(err, "A kill that was never sent could not be taken out of the budget", "target", a.target)
	}
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-r.budget.Used(a.target, a.boot))
}

// notSent tells a kill that never reached systemd: no restart was made,
// the budget does not count it, and repair has not given up.
func (r *Repairer) notSent(a attempt, err error) {
	r.judged(a, OutcomeRefused, fmt.Sprintf("%s not restarted: %v (not counted in the budget)", a.target, err))
}

// told tells what a kill (or a dry run) did.
func (r *Repairer) told(a attempt, outcome, detail string) {
	st := r.targets[a.target]
	st.held, st.cannot = "", ""
	r.tell(a, outcome, detail)
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
	if errors.Is(err, fs.ErrNotExist) {
		err = setup(fmt.Errorf("%w: is this node's %s run by systemd?", err, t))
	}
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
		err = setup(errors.New("systemd is outside hangwatch's PID namespace (run with hostPID)"))
	}
	if err != nil {
		return f, err
	}
	listener, name, err := r.unitName(ctx, m, t, sdPID)
	if err != nil {
		return f, err
	}
	if f.unit, err = m.Unit(ctx, name); errors.Is(err, ErrNoUnit) {
		err = setup(err)
	}
	if err != nil {
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
	if err := keepsTheRest(ctx, m, f.unit); err != nil {
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
// SIGKILL of its main process (the node's setup), and that it has one.
func restartable(u Unit) error {
	switch {
	case u.KillKeepsItDown != "":
		return setup(fmt.Errorf("unit %s has %s, so systemd would not start it again after a SIGKILL", u.Name, u.KillKeepsItDown))
	case !u.WillRestart():
		return setup(fmt.Errorf("unit %s has Restart=%s, so systemd would not start it again", u.Name, u.Restart))
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

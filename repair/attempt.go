package repair

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// systemdTimeout bounds each exchange with systemd, so a wedged systemd
// cannot hold the repairer.
const systemdTimeout = 5 * time.Second

// attempt is one decision about one target.
type attempt struct {
	target   Target
	reason   string // the condition's reason that made it due
	now      time.Time
	age      time.Duration // how long it has been unwell
	deadlock bool
}

// found is the unit to kill and its main process on this side.
type found struct {
	unit Unit
	pid  int // in hangwatch's PID namespace
}

// attempt applies the guards in order, then kills the unit's main
// process. A spell that is not cured is judged again a whole wait later.
func (r *Repairer) attempt(ctx context.Context, a attempt) {
	st := r.targets[a.target]
	st.prune(a.now)
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-len(st.restarts))
	a.age = a.now.Sub(st.since).Round(time.Second)
	st.since, st.judged = a.now, a.now
	if n := len(st.restarts); n >= r.settings.MaxRestartsPerHour {
		r.tell(a, OutcomeBudgetSpent, fmt.Sprintf("%s not restarted: it was restarted %d times in the last hour, dry runs included (repair.maxRestartsPerHour), so the next rung (eviction, reboot or fencing) is left to act", a.target, n))
		return
	}
	if a.deadlock {
		r.tell(a, OutcomeImpossible, fmt.Sprintf("%s not restarted: KernelDeadlock is True, so a kill cannot complete", a.target))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, systemdTimeout)
	defer cancel()
	m, f, err := r.locate(ctx, a.target)
	if err != nil {
		outcome := OutcomeRefused
		if errors.Is(err, errUninterruptible) {
			outcome = OutcomeImpossible
		}
		r.tell(a, outcome, fmt.Sprintf("%s not restarted: %v", a.target, err))
		return
	}
	defer m.Close()
	r.restart(ctx, a, m, f)
}

// restart kills the unit's main process (or, in a dry run, says it would).
func (r *Repairer) restart(ctx context.Context, a attempt, m Manager, f found) {
	st := r.targets[a.target]
	what := fmt.Sprintf("%s (SIGKILL to its main process, PID %d; Restart=%s starts it again)", f.unit.Name, f.pid, f.unit.Restart)
	if r.settings.DryRun {
		r.tell(a, OutcomeDryRun, "dry run: would restart "+what)
	} else if err := m.KillMain(ctx, f.unit.Name); err != nil {
		r.tell(a, OutcomeFailed, fmt.Sprintf("restart of %s failed: %v", f.unit.Name, err))
		return
	} else {
		r.tell(a, OutcomeRestarted, "restarted "+what)
	}
	st.restarts = append(st.restarts, a.now)
	r.o.Metrics.budget(a.target, r.settings.MaxRestartsPerHour-len(st.restarts))
	if r.o.Progress[a.target] != nil {
		st.settleAt = r.progress(a.target) + settleProbes
	}
	st.told = "" // a spell after the restart is news again
}

var errUninterruptible = errors.New("in uninterruptible sleep")

// locate connects to systemd and finds the target's unit, checking that
// systemd will start it again and that its main process can be killed.
// The Manager is returned open on success.
func (r *Repairer) locate(ctx context.Context, t Target) (Manager, found, error) {
	m, err := r.o.Dial(ctx, r.settings.SystemdSocket)
	if err != nil {
		return nil, found{}, err
	}
	f, err := r.find(ctx, m, t)
	if err != nil {
		m.Close()
		return nil, f, err
	}
	return m, f, nil
}

func (r *Repairer) find(ctx context.Context, m Manager, t Target) (found, error) {
	var f found
	sdPID, err := PeerPID(r.settings.SystemdSocket, systemdTimeout)
	if err == nil && sdPID == 0 {
		err = errors.New("systemd is outside hangwatch's PID namespace (run with hostPID)")
	}
	if err != nil {
		return f, err
	}
	name, err := r.unitName(ctx, m, t, sdPID)
	if err != nil {
		return f, err
	}
	if f.unit, err = m.Unit(ctx, name); err != nil {
		return f, err
	}
	if !f.unit.WillRestart() {
		return f, fmt.Errorf("unit %s has Restart=%s, so systemd would not start it again", name, f.unit.Restart)
	}
	if f.unit.MainPID == 0 {
		return f, fmt.Errorf("unit %s has no main process (%s)", name, f.unit.ActiveState)
	}
	if f.pid, err = r.o.Proc.FromNamespaceOf(int(f.unit.MainPID), sdPID); err != nil {
		return f, err
	}
	state, err := r.o.Proc.State(f.pid)
	if err != nil {
		return f, err
	}
	if state == 'D' {
		return f, fmt.Errorf("the main process of %s (PID %d) is %w (D): a kill cannot complete", name, f.pid, errUninterruptible)
	}
	return f, nil
}

// unitName is the configured unit, or for the runtime the unit of the
// process listening on the CRI socket.
func (r *Repairer) unitName(ctx context.Context, m Manager, t Target, sdPID int) (string, error) {
	if t == TargetKubelet {
		return r.settings.KubeletUnit, nil
	}
	if r.settings.RuntimeUnit != "" {
		return r.settings.RuntimeUnit, nil
	}
	socket := strings.TrimPrefix(r.o.CRISocket, "unix://")
	peer, err := PeerPID(socket, systemdTimeout)
	if err == nil && peer == 0 {
		err = fmt.Errorf("the runtime behind %s is outside hangwatch's PID namespace (run with hostPID, or set repair.runtimeUnit)", socket)
	}
	if err != nil {
		return "", err
	}
	nsPID, err := r.o.Proc.ToNamespaceOf(peer, sdPID)
	if err != nil {
		return "", err
	}
	return m.UnitOfPID(ctx, uint32(nsPID))
}

// tell logs, counts and tells an outcome once per spell: the same detail
// found again a wait later is not news.
func (r *Repairer) tell(a attempt, outcome, detail string) {
	st := r.targets[a.target]
	if st.told == outcome+detail {
		return
	}
	st.told = outcome + detail
	message := fmt.Sprintf("%s; %s for %s", detail, a.reason, a.age)
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
	}
	return "RepairRefused"
}

// prune forgets restarts older than an hour.
func (st *targetState) prune(now time.Time) {
	keep := st.restarts[:0]
	for _, t := range st.restarts {
		if now.Sub(t) < time.Hour {
			keep = append(keep, t)
		}
	}
	st.restarts = keep
}

package conditions

import "time"

// Condition types hangwatch owns by default.
const (
	TypeRuntimeHung         = "RuntimeHung"
	TypePLEGUnhealthy       = "PLEGUnhealthy"
	TypeKernelDeadlock      = "KernelDeadlock"
	TypeKubeletUnresponsive = "KubeletUnresponsive"
)

// Status is a condition's status: the values, and so the JSON, of a
// Node condition's (Status), without the API types.
type Status string

// The statuses of a condition (problem polarity: True means bad).
const (
	StatusTrue    Status = "True"
	StatusFalse   Status = "False"
	StatusUnknown Status = "Unknown"
)

// ReasonNoData is the reason of a condition whose inputs were not observed yet.
const ReasonNoData = "NoDataYet"

// Condition is one node condition as hangwatch holds it.
type Condition struct {
	Type               string    `json:"type"`
	Status             Status    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	LastProbeTime      time.Time `json:"lastProbeTime"`
}

// Evaluation is what one evaluation of a rule found. Unknown means the rule
// cannot tell (its input is not to be trusted); Bad is then false.
type Evaluation struct {
	Bad     bool
	Unknown bool
	Reason  string
	Message string
}

// settleAfter is how many evaluations in a row that agree a condition
// needs to leave an Unknown its rule chose, whatever its thresholds: a
// read that works once after failing is not yet to be trusted.
const settleAfter = 2

// Thresholds set the hysteresis of a condition: RaiseAfter consecutive bad
// evaluations make it True, ClearAfter consecutive good ones make it False.
// With MinDuration the bad streak must also have lasted that long.
// RestoredHold keeps a condition restored True from the Node True for that
// long after the restore, whatever good verdicts say, unless this process
// sees the problem itself: for an input that cannot see the past problem
// again (a kernel line older than the lookback), the rule's own quiet
// window then runs from the restore. HoldSince bounds the hold: a True
// that became True before it (before this boot, for a kernel condition: no
// line of the kernel now running can speak for it) is not held, and the
// first good verdicts clear it.
type Thresholds struct {
	RaiseAfter   int
	ClearAfter   int
	MinDuration  time.Duration
	RestoredHold time.Duration
	HoldSince    time.Time
}

// Tracker holds one condition and applies hysteresis to verdicts.
type Tracker struct {
	cond       Condition
	thresholds Thresholds
	bad, good  int
	badSince   time.Time
	holdUntil  time.Time // a restored True does not clear before this
	unsure     bool      // Unknown because the rule could not tell
}

// NewTracker starts a condition as Unknown.
func NewTracker(condType string, th Thresholds, now time.Time) *Tracker {
	if th.RaiseAfter < 1 {
		th.RaiseAfter = 1
	}
	if th.ClearAfter < 1 {
		th.ClearAfter = 1
	}
	return &Tracker{thresholds: th, cond: Condition{Type: condType, Status: StatusUnknown,
		Reason: ReasonNoData, Message: "hangwatch has not observed this yet", LastTransitionTime: now}}
}

// Condition returns the current condition.
func (t *Tracker) Condition() Condition { return t.cond }

// Update applies one verdict and reports whether status, reason or message
// changed. From Unknown a good verdict clears at once, since there is no
// problem to be sure has ended, except from an Unknown the rule chose,
// which needs settleAfter agreeing verdicts either way.
func (t *Tracker) Update(now time.Time, v Evaluation) bool {
	t.cond.LastProbeTime = now
	if v.Unknown {
		return t.cannotTell(now, v)
	}
	if v.Bad {
		t.holdUntil = time.Time{} // this process's own evidence decides from now on
		if t.bad == 0 {
			t.badSince = now
		}
		t.bad, t.good = t.bad+1, 0
	} else {
		t.good, t.bad = t.good+1, 0
	}
	status := t.cond.Status
	raiseAfter, clearAfter := t.thresholds.RaiseAfter, t.thresholds.ClearAfter
	if t.unsure {
		raiseAfter, clearAfter = max(raiseAfter, settleAfter), max(clearAfter, settleAfter)
	}
	raise := t.bad >= raiseAfter && now.Sub(t.badSince) >= t.thresholds.MinDuration
	clear := t.good >= clearAfter && !now.Before(t.holdUntil)
	switch {
	case v.Bad && (status == StatusTrue || raise):
		status = StatusTrue
	case !v.Bad && ((status != StatusTrue && !t.unsure) || clear):
		status = StatusFalse
	default:
		return false // not enough evidence yet to move
	}
	t.unsure = false
	return t.set(now, status, v)
}

// cannotTell makes the condition Unknown with the verdict's reason: the
// streaks start again.
func (t *Tracker) cannotTell(now time.Time, v Evaluation) bool {
	t.bad, t.good, t.unsure = 0, 0, true
	return t.set(now, StatusUnknown, v)
}

// set moves the condition and reports whether that changed it.
func (t *Tracker) set(now time.Time, status Status, v Evaluation) bool {
	changed := status != t.cond.Status || v.Reason != t.cond.Reason || v.Message != t.cond.Message
	if status != t.cond.Status {
		t.cond.LastTransitionTime = now
	}
	t.cond.Status, t.cond.Reason, t.cond.Message = status, v.Reason, v.Message
	return changed
}

// Restore carries on a condition read back from the Node, so a restart
// never resets it: the streaks start again from the Node's status, and a
// True one is held for RestoredHold from now. A condition already True
// from this process's own evidence is kept.
func (t *Tracker) Restore(c Condition, now time.Time) bool {
	if c.Type != t.cond.Type || t.cond.Status == StatusTrue || c.Status == "" {
		return false
	}
	probe := t.cond.LastProbeTime
	t.cond = c
	t.cond.LastProbeTime = probe
	t.bad, t.good, t.unsure = 0, 0, false
	t.holdUntil = time.Time{}
	if c.Status == StatusTrue && t.thresholds.RestoredHold > 0 && !c.LastTransitionTime.Before(t.thresholds.HoldSince) {
		t.holdUntil = now.Add(t.thresholds.RestoredHold)
	}
	return true
}

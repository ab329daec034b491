package conditions

import (
	"time"

	"k8s.io/klog/v2"
)

// Cause says why the engine published a Judgement.
type Cause string

// The causes of a Judgement.
const (
	// CauseSubscribed is the state handed to a new subscriber.
	CauseSubscribed Cause = "Subscribed"
	// CauseObserved is an observation of one input judged.
	CauseObserved Cause = "Observed"
	// CauseReloaded is the rules replaced (Engine.Reload).
	CauseReloaded Cause = "Reloaded"
	// CauseRestored is the Node's conditions read back and carried on
	// (Engine.Restore).
	CauseRestored Cause = "Restored"
)

// Change is one condition's change of status, reason or message.
type Change struct{ Before, After Condition }

// Judgement is what the engine publishes, the one way its news leaves it:
// each time it judges an observation (whether a condition moved or not),
// reloads its rules, restores the Node's conditions, and once to each new
// subscriber. Every subscriber is handed the same Judgement: its slices
// are to be read, not changed.
type Judgement struct {
	Cause Cause
	// Input is the input judged, for CauseObserved.
	Input string
	// At is the engine's time of the judgement.
	At time.Time
	// Changes are the conditions that moved, in the order they moved:
	// each is a transition (a Node Event's news).
	Changes []Change
	// Conditions are all the engine's conditions after the judgement,
	// sorted by type: the latest state.
	Conditions []Condition
	// OnNode are, for CauseRestored, the Node's conditions as read back.
	OnNode []Condition
}

// Subscriber hears every Judgement of an engine, one at a time and in the
// order they were made, outside the engine's lock but on the goroutine
// that made it. Judged must return promptly and never wait on I/O or call
// back into the engine: a consumer that is slow keeps the latest state
// (see Latest) or a queue of its own.
type Subscriber interface {
	Judged(j Judgement)
}

// SubscriberFunc is a function that is a Subscriber.
type SubscriberFunc func(Judgement)

// Judged calls f.
func (f SubscriberFunc) Judged(j Judgement) { f(j) }

// Subscribe adds s to the engine's subscribers and hands it the current
// state at once (CauseSubscribed), so it need not read the engine to
// start.
func (e *Engine) Subscribe(s Subscriber) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	j := Judgement{Cause: CauseSubscribed, At: e.clk.Now(), Conditions: e.set.Snapshot()}
	e.mu.Unlock()
	e.subs = append(e.subs, s)
	s.Judged(j)
}

// judge runs f under the engine's lock, then publishes the judgement it
// returns to every subscriber. Judgements are published one at a time,
// in the order they were made.
func (e *Engine) judge(f func(now time.Time) Judgement) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	now := e.clk.Now()
	j := f(now)
	j.At, j.Conditions = now, e.set.Snapshot()
	e.mu.Unlock()
	for _, c := range j.Changes {
		a := c.After
		klog.InfoS("Condition changed", "type", a.Type, "status", a.Status, "reason", a.Reason, "message", a.Message)
	}
	for _, s := range e.subs {
		s.Judged(j)
	}
}

package cri

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// InFlight is a call that has been sent and has not returned yet.
type InFlight struct {
	Method string        `json:"method"`
	Object string        `json:"object,omitempty"`
	Age    time.Duration `json:"-"`
}

type callKey struct {
	method string
	object string
	// beat marks the heartbeat's own list call, which answers nothing a
	// cycle needs: a cycle's list must not join it, nor it a cycle's.
	beat bool
}

// outstanding is one call that has been sent: when, and, once it
// returns, its result (done is closed then).
type outstanding struct {
	start  time.Time
	done   chan struct{}
	result CallResult
}

// inflightTracker records when each outstanding call started. It is safe for
// concurrent use; a scrape may read it while calls run.
type inflightTracker struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	calls map[callKey]*outstanding
	// unanswered is, per method, since when its calls have gone without
	// any answer: the start of the first call sent after the last answer,
	// or that answer's time when calls sent before it are still out.
	unanswered map[string]time.Time
	// ownWordAt is, per method, when a call of it last returned with the
	// runtime's own word: a result or an error of its own, not a refused
	// or closed connection, a timeout or a cancel.
	ownWordAt map[string]time.Time
	// heardAt is, per method ever sent, when the runtime last answered
	// it (any message), or when its first call was sent.
	heardAt map[string]time.Time
}

func newInflightTracker(c clock.PassiveClock) *inflightTracker {
	return &inflightTracker{clock: c, calls: map[callKey]*outstanding{}, unanswered: map[string]time.Time{}, heardAt: map[string]time.Time{},
		ownWordAt: map[string]time.Time{}}
}

// begin records a call and returns it with true; if the same call is
// already out it returns that one, with false.
func (t *inflightTracker) begin(k callKey, start time.Time) (*outstanding, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.calls[k]; ok {
		return o, false
	}
	o := &outstanding{start: start, done: make(chan struct{})}
	t.calls[k] = o
	if _, ok := t.heardAt[k.method]; !ok {
		t.heardAt[k.method] = start
	}
	if _, ok := t.unanswered[k.method]; !ok {
		t.unanswered[k.method] = start
	}
	return o, true
}

// end records the call's result and releases anyone waiting on it.
func (t *inflightTracker) end(k callKey, r CallResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.calls[k]; ok {
		o.result = r
		close(o.done)
		delete(t.calls, k)
	}
	if r.Err == "" || (r.Class != ClassUnreachable && r.Class != ClassTimeout && r.Class != ClassCanceled) {
		t.ownWordAt[k.method] = t.clock.Now()
	}
	if !answered(r) {
		return // the runtime said nothing: the silence goes on
	}
	t.heardAt[k.method] = t.clock.Now()
	delete(t.unanswered, k.method)
	if t.outFor(k.method) {
		t.unanswered[k.method] = t.clock.Now() // the calls still out are unanswered from now
	}
}

// heard records a message of a call still out, such as one message of a
// list stream: the runtime has answered, and its calls still out are
// unanswered from now.
func (t *inflightTracker) heard(method string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	t.heardAt[method] = now
	if t.outFor(method) {
		t.unanswered[method] = now
	}
}

// answered tells whether the runtime answered a call that returned: with
// a result or an error of its own, however late. A call that ended only
// because its lifetime ran out, or its caller gave up, was not answered;
// one the socket refused or whose connection closed was (nothing listens:
// not a hang).
func answered(r CallResult) bool {
	if r.Err == "" {
		return true
	}
	return r.Class != ClassTimeout && r.Class != ClassCanceled
}

// answeredSince tells whether the runtime itself answered method since
// start (a result or an error of its own) and no call of it sent no later
// than start is still out. A call that ended because its connection
// closed (the runtime killed while it hung) is no answer: the runtime is
// not back.
func (t *inflightTracker) answeredSince(method string, start time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, o := range t.calls {
		if k.method == method && !o.start.After(start) {
			return false
		}
	}
	at, ok := t.ownWordAt[method]
	return ok && !at.Before(start)
}

// outFor tells whether a call of method is out; t.mu is held.
func (t *inflightTracker) outFor(method string) bool {
	for k := range t.calls {
		if k.method == method {
			return true
		}
	}
	return false
}

// Unanswered is, of methods, the one whose calls have gone longest with
// no answer at all while one of them is out, and for how long, on the
// prober's clock: any answer to that method, however late, starts it
// again. 0 when each of them has answered since its oldest call still out
// was sent, or none is out.
func (t *inflightTracker) Unanswered(methods []string) (string, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	var worst string
	var longest time.Duration
	for _, m := range methods {
		since, ok := t.unanswered[m]
		if !ok || !t.outFor(m) {
			continue
		}
		if d := now.Sub(since); d > longest || worst == "" {
			worst, longest = m, d
		}
	}
	return worst, longest
}

// Silent is how long every one of methods has gone without any answer,
// on the prober's clock: the shortest of the times since each was last
// answered (a list stream's message is an answer), or since its first
// call when it never was. Methods never sent are left out; 0 when none
// was. The fence acts only on a runtime silent on every call the
// kubelet's pod lifecycle needs: one slow list, or one call that hangs
// while the others answer, is not that.
func (t *inflightTracker) Silent(methods []string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	shortest, any := time.Duration(0), false
	for _, m := range methods {
		since, ok := t.heardAt[m]
		if !ok {
			continue
		}
		if d := now.Sub(since); !any || d < shortest {
			shortest, any = d, true
		}
	}
	return shortest
}

// snapshot lists the outstanding calls, oldest first.
func (t *inflightTracker) snapshot() []InFlight {
	t.mu.Lock()
	out := make([]InFlight, 0, len(t.calls))
	for k, o := range t.calls {
		out = append(out, InFlight{Method: k.method, Object: k.object, Age: t.clock.Since(o.start)})
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Age != out[j].Age {
			return out[i].Age > out[j].Age
		}
		return out[i].Method+out[i].Object < out[j].Method+out[j].Object
	})
	return out
}

// oldestByMethod returns, per method with a call out, how long it has
// waited: the age of its oldest outstanding call, or, when longer, how
// long the method has gone without any answer (Unanswered), so a call
// cancelled at its lifetime and sent again goes on counting from the
// first.
func (t *inflightTracker) oldestByMethod() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range t.snapshot() {
		if c.Age > out[c.Method] {
			out[c.Method] = c.Age
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	for m, since := range t.unanswered {
		if d := now.Sub(since); t.outFor(m) && d > out[m] {
			out[m] = d
		}
	}
	return out
}

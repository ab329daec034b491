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
}

func newInflightTracker(c clock.PassiveClock) *inflightTracker {
	return &inflightTracker{clock: c, calls: map[callKey]*outstanding{}}
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

// oldestByMethod returns the age of the oldest outstanding call per method.
func (t *inflightTracker) oldestByMethod() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range t.snapshot() {
		if c.Age > out[c.Method] {
			out[c.Method] = c.Age
		}
	}
	return out
}

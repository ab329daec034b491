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
}

// inflightTracker records when each outstanding call started. It is safe for
// concurrent use; a scrape may read it while calls run.
type inflightTracker struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	calls map[callKey]time.Time
}

func newInflightTracker(c clock.PassiveClock) *inflightTracker {
	return &inflightTracker{clock: c, calls: map[callKey]time.Time{}}
}

// begin records a call; it returns false if the same call is already out.
func (t *inflightTracker) begin(k callKey, start time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.calls[k]; ok {
		return false
	}
	t.calls[k] = start
	return true
}

func (t *inflightTracker) end(k callKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.calls, k)
}

// age returns how long the call has been out, if it is.
func (t *inflightTracker) age(k callKey) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start, ok := t.calls[k]
	if !ok {
		return 0, false
	}
	return t.clock.Since(start), true
}

// snapshot lists the outstanding calls, oldest first.
func (t *inflightTracker) snapshot() []InFlight {
	t.mu.Lock()
	out := make([]InFlight, 0, len(t.calls))
	for k, start := range t.calls {
		out = append(out, InFlight{Method: k.method, Object: k.object, Age: t.clock.Since(start)})
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

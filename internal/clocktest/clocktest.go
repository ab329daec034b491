// Package clocktest steps a fake clock for unit tests whose code waits on
// it in goroutines of its own. A test cannot tell when such a goroutine
// has parked on the clock, only ask the clock how many wait, so these
// helpers yield the processor until it has, up to a bound in real time,
// and fail the test, saying what they waited for, past it.
package clocktest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// Within is how long, in real time, Await waits before it fails the test.
const Within = 10 * time.Second

// yieldsPerStep is how often StepUntil yields, checking its condition,
// before it steps the clock again.
const yieldsPerStep = 1000

// Await yields until cond holds, for goroutines the test cannot otherwise
// synchronise with (a call blocked in a fake, a write to a fake sink); it
// fails t after Within of real time.
func Await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for i := 0; !cond(); i++ {
		if i%1000 == 999 && time.Since(start) > Within {
			t.Fatalf("gave up after %v waiting for %s", Within, what)
		}
		runtime.Gosched()
	}
}

// AwaitWaiters yields until at least n goroutines wait on clk, failing t
// after Within of real time.
func AwaitWaiters(t testing.TB, clk *testclock.FakeClock, n int) {
	t.Helper()
	Await(t, fmt.Sprintf("%d waiters on the fake clock (%d now)", n, clk.Waiters()),
		func() bool { return clk.Waiters() >= n })
}

// StepUntil steps clk by step, each time at least n goroutines wait on it,
// letting them run between steps, until cond holds. It returns the
// simulated time that took, and fails t after limit of simulated time or
// when fewer than n ever wait.
func StepUntil(t testing.TB, clk *testclock.FakeClock, n int, step, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := clk.Now()
	for clk.Since(start) <= limit {
		for range yieldsPerStep {
			if cond() {
				return clk.Since(start)
			}
			runtime.Gosched()
		}
		AwaitWaiters(t, clk, n)
		clk.Step(step)
	}
	t.Fatalf("%s: not within %v of simulated time", what, limit)
	return 0
}

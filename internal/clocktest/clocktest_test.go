package clocktest

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestStepUntilStepsWhileAGoroutineWaits(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fired := make(chan struct{})
	go func() {
		<-clk.After(3 * time.Second)
		close(fired)
	}()
	took := StepUntil(t, clk, 1, time.Second, time.Minute, "the timer to fire", func() bool {
		select {
		case <-fired:
			return true
		default:
			return false
		}
	})
	if took != 3*time.Second {
		t.Fatalf("took %v of simulated time, want 3s", took)
	}
}

func TestAwaitWaitersSeesAParkedGoroutine(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	go func() { <-clk.After(time.Second) }()
	AwaitWaiters(t, clk, 1)
	clk.Step(time.Second)
}

package conditions

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

// TestRelistSlowCountsAfterSlowFor: the built-in PLEGUnhealthy rule counts
// RelistSlow once it has lasted its minDuration (--pleg-slow-for, 2m), a
// stall at once, and a healthy look in between starts the slow run over.
// (It was pleg's own holdSlow.)
func TestRelistSlowCountsAfterSlowFor(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	e, err := NewEngine(WithPLEGSlowFor(DefaultSpecs(), 2*time.Minute), clk, EngineOptions{Available: []string{InputPLEG}})
	if err != nil {
		t.Fatal(err)
	}
	look := func(verdict, reason string, after time.Duration) Condition {
		t.Helper()
		clk.Step(after)
		e.Observe(InputPLEG, map[string]any{"verdict": verdict, "reason": reason, "message": reason + " seen"})
		for _, c := range e.Set().Snapshot() {
			if c.Type == TypePLEGUnhealthy {
				return c
			}
		}
		t.Fatal("no PLEGUnhealthy")
		return Condition{}
	}
	if c := look("Unhealthy", ReasonRelistSlow, 0); c.Status != corev1.ConditionFalse {
		t.Fatalf("first slow look: %+v, want False", c)
	}
	if c := look("Unhealthy", ReasonRelistSlow, time.Minute); c.Status != corev1.ConditionFalse {
		t.Fatalf("slow for 1m: %+v", c)
	}
	look("Healthy", "RelistHealthy", 10*time.Second)
	if c := look("Unhealthy", ReasonRelistSlow, 10*time.Second); c.Status != corev1.ConditionFalse {
		t.Fatalf("slow again after a healthy look: %+v", c)
	}
	if c := look("Unhealthy", ReasonRelistSlow, 119*time.Second); c.Status != corev1.ConditionFalse {
		t.Fatalf("slow again for 1m59s: %+v", c)
	}
	if c := look("Unhealthy", ReasonRelistSlow, time.Second); c.Status != corev1.ConditionTrue || c.Reason != ReasonRelistSlow {
		t.Fatalf("slow for 2m: %+v, want True RelistSlow", c)
	}
	look("Healthy", "RelistHealthy", time.Second)
	if c := look("Healthy", "RelistHealthy", time.Second); c.Status != corev1.ConditionFalse {
		t.Fatalf("healthy twice: %+v", c)
	}
	if c := look("Unhealthy", "RelistStalled", time.Second); c.Status != corev1.ConditionTrue || c.Reason != "RelistStalled" {
		t.Fatalf("a stall is never held: %+v", c)
	}
}

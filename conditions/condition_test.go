package conditions

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestTrackerStartsUnknownAndAppliesHysteresis(t *testing.T) {
	tr := NewTracker("RuntimeHung", Thresholds{RaiseAfter: 2, ClearAfter: 2}, t0)
	if c := tr.Condition(); c.Status != StatusUnknown || c.Reason != ReasonNoData {
		t.Fatalf("initial = %+v, want Unknown/NoDataYet", c)
	}
	good := Evaluation{Reason: "Fine", Message: "fine"}
	bad := Evaluation{Bad: true, Reason: "ListPodSandboxHung", Message: "hung"}
	steps := []struct {
		v       Evaluation
		status  Status
		changed bool
	}{
		{good, StatusFalse, true}, // from Unknown a good verdict clears at once
		{bad, StatusFalse, false}, // one bad is not enough
		{bad, StatusTrue, true},
		{bad, StatusTrue, false}, // same state: no change, no write
		{good, StatusTrue, false},
		{bad, StatusTrue, false}, // the good streak restarts
		{good, StatusTrue, false},
		{good, StatusFalse, true},
	}
	for i, s := range steps {
		now := t0.Add(time.Duration(i+1) * time.Second)
		changed := tr.Update(now, s.v)
		c := tr.Condition()
		if c.Status != s.status || changed != s.changed {
			t.Fatalf("step %d: status %s changed %v, want %s %v", i, c.Status, changed, s.status, s.changed)
		}
		if c.LastProbeTime != now {
			t.Fatalf("step %d: probe time %v, want %v", i, c.LastProbeTime, now)
		}
	}
	if got := tr.Condition().LastTransitionTime; got != t0.Add(8*time.Second) {
		t.Fatalf("last transition = %v, want the final clear", got)
	}
}

func TestTrackerKeepsTransitionTimeWhenOnlyReasonChanges(t *testing.T) {
	tr := NewTracker("RuntimeHung", Thresholds{RaiseAfter: 1, ClearAfter: 1}, t0)
	tr.Update(t0.Add(time.Second), Evaluation{Bad: true, Reason: "ListPodSandboxHung", Message: "a"})
	if !tr.Update(t0.Add(2*time.Second), Evaluation{Bad: true, Reason: "RuntimeNotResponding", Message: "b"}) {
		t.Fatal("a new reason must count as a change")
	}
	if c := tr.Condition(); c.LastTransitionTime != t0.Add(time.Second) || c.Reason != "RuntimeNotResponding" {
		t.Fatalf("condition = %+v", c)
	}
}

func TestRestoredTrueIsHeldUntilItsHoldHasPassed(t *testing.T) {
	good := Evaluation{Reason: "Fine", Message: "fine"}
	tr := NewTracker("KernelDeadlock", Thresholds{RaiseAfter: 1, ClearAfter: 1, RestoredHold: 15 * time.Minute}, t0)
	tr.Update(t0, good)
	if !tr.Restore(Condition{Type: "KernelDeadlock", Status: StatusTrue, Reason: "TaskBlocked"}, t0) {
		t.Fatal("restore refused")
	}
	if tr.Update(t0.Add(15*time.Minute-time.Second), good) || tr.Condition().Status != StatusTrue {
		t.Fatalf("cleared within the hold: %+v", tr.Condition())
	}
	if !tr.Update(t0.Add(15*time.Minute), good) || tr.Condition().Status != StatusFalse {
		t.Fatalf("not cleared after the hold: %+v", tr.Condition())
	}

	tr = NewTracker("KernelDeadlock", Thresholds{RaiseAfter: 1, ClearAfter: 1, RestoredHold: time.Hour}, t0)
	tr.Restore(Condition{Type: "KernelDeadlock", Status: StatusTrue, Reason: "TaskBlocked"}, t0)
	tr.Update(t0.Add(time.Minute), Evaluation{Bad: true, Reason: "TaskBlocked"})
	if !tr.Update(t0.Add(2*time.Minute), good) || tr.Condition().Status != StatusFalse {
		t.Fatalf("own evidence must end the hold: %+v", tr.Condition())
	}

	tr = NewTracker("RuntimeHung", Thresholds{RaiseAfter: 1, ClearAfter: 1}, t0)
	tr.Restore(Condition{Type: "RuntimeHung", Status: StatusTrue, Reason: "ListPodSandboxHung"}, t0)
	if !tr.Update(t0.Add(time.Second), good) {
		t.Fatal("without a hold a restored True clears by clearAfter")
	}
}

func TestRestoredTrueOfAnEarlierBootIsNotHeld(t *testing.T) {
	good := Evaluation{Reason: "NoGPUFault", Message: "fine"}
	boot := t0.Add(-5 * time.Minute)
	th := Thresholds{RaiseAfter: 1, ClearAfter: 1, RestoredHold: 100 * 365 * 24 * time.Hour, HoldSince: boot}
	tr := NewTracker("GPUUnavailable", th, t0)
	tr.Restore(Condition{Type: "GPUUnavailable", Status: StatusTrue, Reason: "GPUFallenOffBus", LastTransitionTime: boot.Add(-time.Hour)}, t0)
	if !tr.Update(t0.Add(time.Second), good) || tr.Condition().Status != StatusFalse {
		t.Fatalf("a True raised before this boot must clear at the first good verdict: %+v", tr.Condition())
	}
	tr = NewTracker("GPUUnavailable", th, t0)
	tr.Restore(Condition{Type: "GPUUnavailable", Status: StatusTrue, Reason: "GPUFallenOffBus", LastTransitionTime: boot.Add(time.Minute)}, t0)
	if tr.Update(t0.Add(time.Hour), good) || tr.Condition().Status != StatusTrue {
		t.Fatalf("a True raised in this boot is held: %+v", tr.Condition())
	}
}

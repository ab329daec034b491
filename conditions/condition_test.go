package conditions

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestTrackerStartsUnknownAndAppliesHysteresis(t *testing.T) {
	tr := NewTracker("RuntimeHung", Thresholds{RaiseAfter: 2, ClearAfter: 2}, t0)
	if c := tr.Condition(); c.Status != corev1.ConditionUnknown || c.Reason != ReasonNoData {
		t.Fatalf("initial = %+v, want Unknown/NoDataYet", c)
	}
	good := Verdict{Reason: "Fine", Message: "fine"}
	bad := Verdict{Bad: true, Reason: "ListPodSandboxHung", Message: "hung"}
	steps := []struct {
		v       Verdict
		status  corev1.ConditionStatus
		changed bool
	}{
		{good, corev1.ConditionFalse, true}, // from Unknown a good verdict clears at once
		{bad, corev1.ConditionFalse, false}, // one bad is not enough
		{bad, corev1.ConditionTrue, true},
		{bad, corev1.ConditionTrue, false}, // same state: no change, no write
		{good, corev1.ConditionTrue, false},
		{bad, corev1.ConditionTrue, false}, // the good streak restarts
		{good, corev1.ConditionTrue, false},
		{good, corev1.ConditionFalse, true},
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
	tr.Update(t0.Add(time.Second), Verdict{Bad: true, Reason: "ListPodSandboxHung", Message: "a"})
	if !tr.Update(t0.Add(2*time.Second), Verdict{Bad: true, Reason: "RuntimeNotResponding", Message: "b"}) {
		t.Fatal("a new reason must count as a change")
	}
	if c := tr.Condition(); c.LastTransitionTime != t0.Add(time.Second) || c.Reason != "RuntimeNotResponding" {
		t.Fatalf("condition = %+v", c)
	}
}

package remedy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestNodeClockSkewNeitherShortensNorExtends: a node whose clock runs 9
// minutes behind is tainted at once but evicted only 45 s later on the
// controller's clock; one an hour ahead is not acted on until its heartbeat
// moves, and turns stale 10 minutes after it stops moving (its writer
// died), however fresh its own timestamps claim to be.
func TestNodeClockSkewNeitherShortensNorExtends(t *testing.T) {
	p, k := DefaultPolicy(), NewClocks()
	p.MaxUnhealthy.StrVal = "100%"
	behind := node("behind", "RuntimeHung", corev1.ConditionTrue, t0.Add(-9*time.Minute), t0.Add(-9*time.Minute))
	ahead := node("ahead", "RuntimeHung", corev1.ConditionTrue, t0.Add(time.Hour), t0.Add(time.Hour))
	if got := kinds(decideAt(p, k, []*corev1.Node{behind, ahead}, t0)); got != "taint behind hangwatch.io/runtime-hung" {
		t.Fatalf("first sight: %q, want only behind tainted", got)
	}
	behind = taintOf(behind, "RuntimeHung")
	now := t0.Add(time.Second)
	if plan := decideAt(p, k, []*corev1.Node{behind, ahead}, now); len(plan.Actions) != 0 || rowOf(plan, "behind", "RuntimeHung").Next != "evict in 44s" {
		t.Fatalf("a second later: %q %+v", kinds(plan), plan.Rows)
	}
	ahead = beat(ahead, t0.Add(time.Hour+5*time.Second)) // its writer is alive: its own clock moved
	if got := kinds(decideAt(p, k, []*corev1.Node{behind, ahead}, now.Add(time.Second))); got != "taint ahead hangwatch.io/runtime-hung" {
		t.Fatalf("ahead's heartbeat moved: %q", got)
	}
	ahead = taintOf(ahead, "RuntimeHung")
	if got := kinds(decideAt(p, k, []*corev1.Node{behind, ahead}, t0.Add(45*time.Second))); got != "evict behind hangwatch.io/runtime-hung" {
		t.Fatalf("45s after first sight: %q", got)
	}
	dead := now.Add(time.Second + 10*time.Minute + time.Second)
	behind = beat(behind, dead.Add(-9*time.Minute))
	plan := decideAt(p, k, []*corev1.Node{behind, ahead}, dead)
	if plan.Rows[0].State != StateStale || kinds(plan) != "evict behind hangwatch.io/runtime-hung" { // rows by node: ahead first
		t.Fatalf("ahead's writer silent 10m: %q %+v", kinds(plan), plan.Rows)
	}
}

// TestAStatusSeenStaleCountsOnlyOnceFresh: a True condition first seen
// stale has no age; once its heartbeat moves, taintAfter and evictAfter
// count from then, so taint and eviction never come in successive passes.
func TestAStatusSeenStaleCountsOnlyOnceFresh(t *testing.T) {
	p, k := DefaultPolicy(), NewClocks()
	n := node("a", "RuntimeHung", corev1.ConditionTrue, t0.Add(-time.Hour), t0.Add(-time.Hour))
	decideAt(p, k, []*corev1.Node{n}, t0)
	n = beat(n, t0.Add(-time.Hour+time.Minute))
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, t0.Add(time.Minute))); got != "taint a hangwatch.io/runtime-hung" {
		t.Fatalf("fresh again: %q", got)
	}
	n = taintOf(n, "RuntimeHung")
	if plan := decideAt(p, k, []*corev1.Node{n}, t0.Add(time.Minute+time.Second)); len(plan.Actions) != 0 {
		t.Fatalf("the next pass: %q", kinds(plan))
	}
}

// TestOnlyTrustedWritersAreActedOn: node-problem-detector's KernelDeadlock
// is left alone by default, and acted on once the policy trusts its writer.
func TestOnlyTrustedWritersAreActedOn(t *testing.T) {
	p := DefaultPolicy()
	npd := node("npd", "KernelDeadlock", corev1.ConditionTrue, t0, t0)
	npd.ManagedFields = nil
	npd = writtenBy(npd, "node-problem-detector", "KernelDeadlock")
	plan := decideAt(p, NewClocks(), []*corev1.Node{npd}, t0)
	if len(plan.Actions) != 0 || plan.Unhealthy != 0 || plan.Rows[2].State != StateOtherWriter {
		t.Fatalf("node-problem-detector's condition: %q %+v", kinds(plan), plan.Rows)
	}
	if want := "none: written by node-problem-detector, not by hangwatch"; plan.Rows[2].Next != want {
		t.Errorf("next %q, want %q", plan.Rows[2].Next, want)
	}
	p.Conditions[2].Writers = []string{"hangwatch", "node-problem-detector"}
	if got := kinds(decideAt(p, NewClocks(), []*corev1.Node{npd}, t0)); got != "taint npd hangwatch.io/kernel-deadlock" {
		t.Fatalf("trusted: %q", got)
	}
}

// TestAFlappingConditionKeepsItsTaintLonger: each taint within an hour of
// the last removal doubles clearAfter for that node and condition.
func TestAFlappingConditionKeepsItsTaintLonger(t *testing.T) {
	k := NewClocks()
	k.Tainted("a", "RuntimeHung", t0)
	if d := k.ClearAfter("a", "RuntimeHung", time.Minute); d != time.Minute {
		t.Fatalf("first taint: %v", d)
	}
	for i, want := range []time.Duration{2 * time.Minute, 4 * time.Minute, 8 * time.Minute} {
		at := t0.Add(time.Duration(i+1) * 10 * time.Minute)
		k.Untainted("a", "RuntimeHung", at)
		k.Tainted("a", "RuntimeHung", at.Add(time.Minute))
		if d := k.ClearAfter("a", "RuntimeHung", time.Minute); d != want {
			t.Fatalf("flap %d: clearAfter %v, want %v", i+1, d, want)
		}
	}
	k.Untainted("a", "RuntimeHung", t0.Add(time.Hour))
	k.Tainted("a", "RuntimeHung", t0.Add(3*time.Hour))
	if d := k.ClearAfter("a", "RuntimeHung", time.Minute); d != time.Minute {
		t.Fatalf("after a quiet hour: %v", d)
	}
	if d := k.ClearAfter("b", "RuntimeHung", time.Minute); d != time.Minute {
		t.Fatalf("another node: %v", d)
	}
}

// rowOf is the plan's row for node's condType.
func rowOf(plan Plan, node, condType string) Row {
	for _, r := range plan.Rows {
		if r.Node == node && r.Condition == condType {
			return r
		}
	}
	return Row{}
}

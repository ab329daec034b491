package remedy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

// node is a Node with one condition written by hangwatch, heartbeat at beat.
func node(name, condType string, status corev1.ConditionStatus, since, beat time.Time) *corev1.Node {
	return writtenBy(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeConditionType(condType), Status: status, Reason: "VersionHung",
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(beat)}}}}, DefaultWriter, condType)
}

// writtenBy records manager as the writer of n's condition condType in its
// managedFields, as the API server would.
func writtenBy(n *corev1.Node, manager, condType string) *corev1.Node {
	raw := fmt.Sprintf(`{"f:status":{"f:conditions":{"k:{\"type\":\"%s\"}":{".":{},"f:status":{},"f:type":{}}}}}`, condType)
	n.ManagedFields = append(n.ManagedFields, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}})
	return n
}

// decideAt observes nodes on k at now, then plans, as a pass does.
func decideAt(p *Policy, k *Clocks, nodes []*corev1.Node, now time.Time) Plan {
	k.Observe(p, nodes, now, true)
	return Decide(p, nodes, k, now)
}

// beat returns n with its first condition's heartbeat moved to at.
func beat(n *corev1.Node, at time.Time) *corev1.Node {
	n = n.DeepCopy()
	n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(at)
	return n
}

func kinds(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, string(a.Kind)+" "+a.Node+" "+a.Taint.Key)
	}
	return strings.Join(out, ", ")
}

func taintOf(n *corev1.Node, condType string) *corev1.Node {
	n = n.DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintKey(condType), Value: TaintValue, Effect: corev1.TaintEffectNoSchedule})
	return n
}

func TestTaintKeyIsKebabCase(t *testing.T) {
	for in, want := range map[string]string{"RuntimeHung": "hangwatch.io/runtime-hung", "PLEGUnhealthy": "hangwatch.io/pleg-unhealthy",
		"KernelDeadlock": "hangwatch.io/kernel-deadlock", "PodStartStuck": "hangwatch.io/pod-start-stuck"} {
		if got := TaintKey(in); got != want {
			t.Errorf("TaintKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestRuntimeHungTaintsAtOnceEvictsAfter45sClearsAfterAMinute walks the
// default policy through a freeze and a thaw on a fake clock.
func TestRuntimeHungTaintsAtOnceEvictsAfter45sClearsAfterAMinute(t *testing.T) {
	p, k := DefaultPolicy(), NewClocks()
	n := node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0)
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, t0)); got != "taint a hangwatch.io/runtime-hung" {
		t.Fatalf("at the rise: %q", got)
	}
	n = taintOf(n, "RuntimeHung")
	plan := decideAt(p, k, []*corev1.Node{n}, t0.Add(44*time.Second))
	if len(plan.Actions) != 0 || plan.Rows[0].Next != "evict in 1s" || plan.Rows[0].State != StateTainted {
		t.Fatalf("44s in: %q %+v", kinds(plan), plan.Rows[0])
	}
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, t0.Add(45*time.Second))); got != "evict a hangwatch.io/runtime-hung" {
		t.Fatalf("45s in: %q", got)
	}
	thaw := t0.Add(2 * time.Minute)
	n.Status.Conditions[0].Status, n.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(thaw)
	n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(thaw)
	decideAt(p, k, []*corev1.Node{n}, thaw)
	if plan := decideAt(p, k, []*corev1.Node{n}, thaw.Add(59*time.Second)); len(plan.Actions) != 0 {
		t.Fatalf("59s after the thaw: %q", kinds(plan))
	}
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, thaw.Add(time.Minute))); got != "untaint a hangwatch.io/runtime-hung" {
		t.Fatalf("60s after the thaw: %q", got)
	}
}

// TestPodStartStuckTaintsAndNeverEvicts: a node that starts no pod is
// tainted at once so new pods go elsewhere, its running pods are never
// evicted however long it lasts, and it is untainted 15 s after it starts
// pods again.
func TestPodStartStuckTaintsAndNeverEvicts(t *testing.T) {
	p, k := DefaultPolicy(), NewClocks()
	n := node("a", "PodStartStuck", corev1.ConditionTrue, t0, t0)
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, t0)); got != "taint a hangwatch.io/pod-start-stuck" {
		t.Fatalf("at the rise: %q", got)
	}
	n = taintOf(n, "PodStartStuck")
	for _, at := range []time.Duration{45 * time.Second, 5 * time.Minute, time.Hour} {
		n = beat(n, t0.Add(at))
		if plan := decideAt(p, k, []*corev1.Node{n}, t0.Add(at)); len(plan.Actions) != 0 || rowOf(plan, "a", "PodStartStuck").State != StateTainted {
			t.Fatalf("%v in: %q %+v", at, kinds(plan), plan.Rows[0])
		}
	}
	started := t0.Add(time.Hour + time.Minute)
	n.Status.Conditions[0].Status, n.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(started)
	n = beat(n, started)
	decideAt(p, k, []*corev1.Node{n}, started)
	if plan := decideAt(p, k, []*corev1.Node{n}, started.Add(14*time.Second)); len(plan.Actions) != 0 {
		t.Fatalf("14s after a start: %q", kinds(plan))
	}
	if got := kinds(decideAt(p, k, []*corev1.Node{n}, started.Add(15*time.Second))); got != "untaint a hangwatch.io/pod-start-stuck" {
		t.Fatalf("15s after a start: %q", got)
	}
}

// TestStaleUnknownOrMissingNeverActedOn: a condition whose heartbeat is
// older than two heartbeat periods at first sight, an Unknown one and a
// missing one take no action, and a taint stays until the condition is
// fresh again.
func TestStaleUnknownOrMissingNeverActedOn(t *testing.T) {
	p := DefaultPolicy()
	now := t0.Add(time.Hour)
	stale := node("stale", "RuntimeHung", corev1.ConditionTrue, t0, now.Add(-10*time.Minute-time.Second))
	unknown := node("unknown", "RuntimeHung", corev1.ConditionUnknown, t0, now)
	missing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}
	staleFalse := taintOf(node("stale-false", "RuntimeHung", corev1.ConditionFalse, t0, t0), "RuntimeHung")
	plan := decideAt(p, NewClocks(), []*corev1.Node{stale, unknown, missing, staleFalse}, now)
	if len(plan.Actions) != 0 || plan.Unhealthy != 0 {
		t.Fatalf("acted on stale or unknown conditions: %q, unhealthy %d", kinds(plan), plan.Unhealthy)
	}
	if got := decideAt(p, NewClocks(), []*corev1.Node{stale}, now.Add(-time.Second)); kinds(got) != "taint stale hangwatch.io/runtime-hung" {
		t.Fatalf("the same condition a second fresher: %q", kinds(got))
	}
}

// TestMaxUnhealthyHoldsNewActionsButNotRecovery: 5 of 20 nodes sick with
// maxUnhealthy 20% (4): no taint, while a recovered node is still untainted.
func TestMaxUnhealthyHoldsNewActionsButNotRecovery(t *testing.T) {
	p := DefaultPolicy()
	var nodes []*corev1.Node
	for i := 0; i < 20; i++ {
		status := corev1.ConditionFalse
		if i < 5 {
			status = corev1.ConditionTrue
		}
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), "RuntimeHung", status, t0, t0.Add(59*time.Minute)))
	}
	nodes[19] = taintOf(nodes[19], "RuntimeHung")
	k := NewClocks()
	k.Observe(p, nodes, t0.Add(time.Hour-time.Minute), true) // the recovery seen a minute ago
	plan := decideAt(p, k, nodes, t0.Add(time.Hour))
	if plan.Unhealthy != 5 || plan.Limit != 4 || len(plan.Withheld[GuardMaxUnhealthy]) != 5 {
		t.Fatalf("unhealthy %d, limit %d, held %d", plan.Unhealthy, plan.Limit, len(plan.Withheld[GuardMaxUnhealthy]))
	}
	if got := kinds(plan); got != "untaint n19 hangwatch.io/runtime-hung" {
		t.Fatalf("actions: %q, want only the untaint", got)
	}
	p.MaxUnhealthy = intstr.FromInt32(5)
	if got := len(decideAt(p, k, nodes, t0.Add(time.Hour)).Actions); got != 6 {
		t.Fatalf("maxUnhealthy 5: %d actions, want 5 taints and the untaint", got)
	}
}

func TestOptOutPauseAndForeignTaints(t *testing.T) {
	p := DefaultPolicy()
	opted := node("opted", "RuntimeHung", corev1.ConditionTrue, t0, t0.Add(time.Hour))
	opted.Annotations = map[string]string{OptOutAnnotation: "disabled"}
	foreign := node("foreign", "RuntimeHung", corev1.ConditionFalse, t0, t0.Add(time.Hour))
	foreign.Spec.Taints = []corev1.Taint{{Key: TaintKey("RuntimeHung"), Value: "by-hand", Effect: corev1.TaintEffectNoSchedule},
		{Key: OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
	plan := decideAt(p, NewClocks(), []*corev1.Node{opted, foreign}, t0.Add(time.Hour))
	if len(plan.Actions) != 0 || len(plan.Withheld[GuardOptOut]) != 1 {
		t.Fatalf("opt-out and a foreign taint: %q, held %v", kinds(plan), plan.Withheld)
	}
	p.Paused = true
	hung := node("hung", "RuntimeHung", corev1.ConditionTrue, t0, t0)
	if plan := decideAt(p, NewClocks(), []*corev1.Node{hung}, t0); len(plan.Actions) != 0 || len(plan.Withheld[GuardPaused]) != 1 {
		t.Fatalf("paused: %q", kinds(plan))
	}
}

func TestEvictable(t *testing.T) {
	taint := corev1.Taint{Key: TaintKey("RuntimeHung"), Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}
	yes := true
	now := metav1.Now()
	for name, c := range map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"a Deployment's pod": {corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Controller: &yes}}}}, true},
		"a DaemonSet's pod":  {corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Controller: &yes}}}}, false},
		"a mirror pod":       {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, false},
		"terminating":        {corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, false},
		"finished":           {corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		"tolerates the key":  {corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists}}}}, false},
		"tolerates all":      {corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}, false},
		"tolerates another":  {corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}}}, true},
	} {
		if got := Evictable(&c.pod, taint); got != c.want {
			t.Errorf("%s: evictable %v, want %v", name, got, c.want)
		}
	}
}

func TestPolicyErrorsNameTheirFields(t *testing.T) {
	_, err := DecodePolicy([]byte(`apiVersion: hangwatch.io/v1alpha1
kind: RemedyConfiguration
maxUnhealthy: 150%
maxActionsPerMinute: 0
evictionConcurency: 2
conditions:
- type: RuntimeHung
  evictAfter: 30s
- type: runtimeHung
  taintAfter: 1m
  evictAfter: 10s
  writers: [""]
eviction:
  kinds: [DaemonSet, statefulset]
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown field "evictionConcurency"`, "maxUnhealthy 150%", "maxActionsPerMinute 0",
		"conditions[0].evictAfter 30s: needs taintAfter", "conditions[1].type runtimeHung", "conditions[1].evictAfter 10s: must not be shorter",
		`conditions[1].writers[0] "": must name a field manager`, `eviction.kinds[0] "DaemonSet": a DaemonSet's pods are never evicted`,
		`eviction.kinds[1] "statefulset": must be a controller kind`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	p, err := DecodePolicy([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\ndryRun: true\nmaxUnhealthy: 3\n"))
	if err != nil || !p.DryRun || len(p.Conditions) != len(DefaultPolicy().Conditions) {
		t.Fatalf("a small file over the defaults: %+v, %v", p, err)
	}
}

func FuzzDecodePolicy(f *testing.F) {
	f.Add([]byte("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\nmaxUnhealthy: 20%\n"))
	f.Add([]byte("conditions:\n- type: X\n  taintAfter: 1s\n  evictAfter: 2s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePolicy(data)
		if err == nil {
			decideAt(p, NewClocks(), []*corev1.Node{node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0)}, t0)
		}
	})
}

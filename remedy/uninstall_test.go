package remedy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// markedNode is a Node with everything hangwatch writes on one (its
// conditions, remedy's taint, the fence's out-of-service taint and
// annotations) beside what others wrote there.
func markedNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fencing.OptInLabel: fencing.OptInValue},
			ManagedFields: []metav1.ManagedFieldsEntry{statusWriter(DefaultWriter, "RuntimeHung", "KernelDeadlock"),
				statusWriter("node-problem-detector", "ExampleProblem", "PLEGUnhealthy")},
			Annotations: map[string]string{fencing.RequestAnnotation: "f1-ab", fencing.AttestedAnnotation: "f1-ab", OptOutAnnotation: "disabled"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "hangwatch.io/runtime-hung", Value: TaintValue, Effect: corev1.TaintEffectNoSchedule},
			{Key: "hangwatch.io/runtime-hung", Value: "someone-else", Effect: corev1.TaintEffectNoSchedule},
			fencing.OutOfService(),
			{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: "RuntimeHung", Status: corev1.ConditionTrue}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			{Type: "KernelDeadlock", Status: corev1.ConditionFalse}, {Type: "ExampleProblem", Status: corev1.ConditionTrue},
			{Type: "PLEGUnhealthy", Status: corev1.ConditionTrue}}},
	}
}

// statusWriter is a managedFields entry of manager owning the content of
// the conditions of types.
func statusWriter(manager string, types ...string) metav1.ManagedFieldsEntry {
	conds := []string{}
	for _, t := range types {
		conds = append(conds, fmt.Sprintf(`"k:{\"type\":\"%s\"}":{".":{},"f:status":{},"f:type":{}}`, t))
	}
	raw := `{"f:status":{"f:conditions":{` + strings.Join(conds, ",") + `}}}`
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
}

// cleanNodes runs CleanNodes on a fake clock, stepping it whenever the
// passes wait, until it returns.
func cleanNodes(t *testing.T, o CleanOptions) (int, []string) {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	var lines []string
	o.Clock, o.Poll, o.Cleaned = clk, 2*time.Second, func(node string, what []string) { lines = append(lines, node) }
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := CleanNodes(context.Background(), o); done <- result{n, err} }()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.n, lines
		case <-time.After(10 * time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(2 * time.Second)
			}
		}
	}
}

func TestCleanNodesTakesOffWhatHangwatchWroteAndNothingElse(t *testing.T) {
	cs := fake.NewClientset(markedNode("a"), markedNode("b"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "clean"}})
	n, lines := cleanNodes(t, CleanOptions{Client: cs, Types: OwnedConditionTypes})
	if n != 2 || !slices.Equal(lines, []string{"a", "b"}) {
		t.Fatalf("cleaned %d, told %v: want a and b", n, lines)
	}
	for _, name := range []string{"a", "b"} {
		got, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var types []corev1.NodeConditionType
		for _, c := range got.Status.Conditions {
			types = append(types, c.Type)
		}
		if !slices.Equal(types, []corev1.NodeConditionType{corev1.NodeReady, "ExampleProblem", "PLEGUnhealthy"}) {
			t.Errorf("%s: conditions %v, want the kubelet's Ready and another writer's two (one of a type of hangwatch's)", name, types)
		}
		want := []corev1.Taint{
			{Key: "hangwatch.io/runtime-hung", Value: "someone-else", Effect: corev1.TaintEffectNoSchedule},
			{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		if !slices.EqualFunc(got.Spec.Taints, want, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
			t.Errorf("%s: taints %v, want only others' %v", name, got.Spec.Taints, want)
		}
		if len(got.Annotations) != 1 || got.Annotations[OptOutAnnotation] != "disabled" || got.Labels[fencing.OptInLabel] != fencing.OptInValue {
			t.Errorf("%s: annotations %v, labels %v: want the operator's opt-out and opt-in kept", name, got.Annotations, got.Labels)
		}
	}
}

func TestCleanNodesDryRunChangesNothing(t *testing.T) {
	cs := fake.NewClientset(markedNode("a"))
	n, lines := cleanNodes(t, CleanOptions{Client: cs, Types: OwnedConditionTypes, DryRun: true})
	if n != 1 || len(lines) != 1 {
		t.Fatalf("would clean %d, told %v: want a", n, lines)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("a dry run did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestLeftOnAPolicyConditionsTaint(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7", ManagedFields: []metav1.ManagedFieldsEntry{statusWriter(DefaultWriter, "GPUHung")}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: TaintKey("GPUHung"), Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: "GPUHung", Status: corev1.ConditionTrue}}}}
	if l, err := LeftOn(n, OwnedConditionTypes); err != nil || !l.Empty() {
		t.Fatalf("a type not named: %v %v, want nothing", l.What, err)
	}
	l, err := LeftOn(n, append(slices.Clone(OwnedConditionTypes), "GPUHung"))
	if err != nil || !slices.Equal(l.What, []string{"condition GPUHung=True", "taint hangwatch.io/gpu-hung=hangwatch-remedy:NoSchedule"}) {
		t.Fatalf("the policy's type: %v %v", l.What, err)
	}
	if want := `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/spec/taints","value":[]}]`; string(l.Node) != want {
		t.Errorf("the taints' patch %s, want %s", l.Node, want)
	}
}

package remedy

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"
)

// TestBudgetOutlivesTheLeader: a leader spends 3 of 3 and dies; the next
// leader, reading the Lease, takes nothing until a minute after it read
// them (it does not trust the dead leader's clock), then takes 3 again.
func TestBudgetOutlivesTheLeader(t *testing.T) {
	cs := fake.NewClientset()
	lease := types.NamespacedName{Namespace: "kube-system", Name: "hangwatch-remedy-actions"}
	ctx := context.Background()
	take := func(b *Budget, at time.Time) bool {
		ok, err := b.Take(ctx, 3, Action{Node: "n", Kind: ActionTaint, Condition: "RuntimeHung"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	first := NewBudget(cs.CoordinationV1(), lease, "first")
	for i := 0; i < 3; i++ {
		if !take(first, t0) {
			t.Fatalf("first leader: action %d refused", i)
		}
	}
	if take(first, t0.Add(time.Second)) {
		t.Fatal("first leader: a 4th action in the minute")
	}
	second := NewBudget(cs.CoordinationV1(), lease, "second")
	// the second leader's clock runs 50 s behind the first's
	takeover := t0.Add(10*time.Second - 50*time.Second)
	if take(second, takeover) {
		t.Fatal("second leader: an action while the first's 3 are in the minute")
	}
	if take(second, takeover.Add(59*time.Second)) {
		t.Fatal("second leader: an action 59 s after it read the budget")
	}
	for i := 0; i < 3; i++ {
		if !take(second, takeover.Add(time.Minute)) {
			t.Fatalf("second leader, a minute on: action %d refused", i)
		}
	}
	third := NewBudget(cs.CoordinationV1(), lease, "third")
	if take(third, t0.Add(time.Hour)) != true {
		t.Fatal("an hour later: the old records still count")
	}
}

// staleLister serves the nodes as a lagging cache saw them.
type staleLister []*corev1.Node

func (l staleLister) List() ([]*corev1.Node, error) { return l, nil }

func (l staleLister) Get(name string) (*corev1.Node, error) {
	for _, n := range l {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// TestAFreshReadBeforeActing: the cache says RuntimeHung True for a
// minute, the API server says it turned False: no eviction, and no taint.
func TestAFreshReadBeforeActing(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	cached := node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0)
	live := node("a", "RuntimeHung", corev1.ConditionFalse, t0.Add(30*time.Second), t0.Add(30*time.Second))
	c, cs := newTestController(t, DefaultPolicy(), clk, live)
	c.o.Nodes = staleLister{cached}
	c.Pass(context.Background())
	if got := tainted(t, cs); got != 0 {
		t.Fatalf("tainted %d from a stale cache", got)
	}
	c.o.Nodes = staleLister{taintOf(cached, "RuntimeHung")}
	clk.Step(time.Minute)
	c.Pass(context.Background())
	c.evict.wait()
	if got := evicted(cs); len(got) != 0 {
		t.Fatalf("evicted %v from a stale cache", got)
	}
	if v := fmt.Sprint(c.Last().Actions); v == "[]" {
		t.Fatalf("the cache planned nothing: %v", v)
	}
}

// FuzzBudgetRecord: whatever the Lease's annotation holds, Take answers
// without panicking, and refuses (fails closed) when it cannot read it.
func FuzzBudgetRecord(f *testing.F) {
	f.Add(`[{"time":"2026-11-25T03:00:00Z","identity":"x","node":"n","action":"taint","condition":"RuntimeHung"}]`)
	f.Add(`{}`)
	f.Add(`[{"time":"not a time"}]`)
	f.Fuzz(func(t *testing.T, annotation string) {
		cs := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns",
			Annotations: map[string]string{RecentActionsAnnotation: annotation}}})
		b := NewBudget(cs.CoordinationV1(), types.NamespacedName{Namespace: "ns", Name: "b"}, "me")
		ok, err := b.Take(context.Background(), 3, Action{Node: "n", Kind: ActionTaint}, t0)
		if err != nil && ok {
			t.Fatalf("took an action with an unreadable budget: %v", err)
		}
	})
}

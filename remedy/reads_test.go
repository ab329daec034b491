package remedy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	testclock "k8s.io/utils/clock/testing"
)

// nodeGets counts the GETs of Nodes cs has answered, and forgets them.
func nodeGets(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	cs.ClearActions()
	return n
}

func heldEvents(rec *record.FakeRecorder) int {
	n := 0
	for {
		select {
		case e := <-rec.Events:
			if strings.Contains(e, "RemedyHeldBack") {
				n++
			}
		default:
			return n
		}
	}
}

// TestFreshReadsStayWithinTheBudget: 300 sick nodes and a budget of 10 a
// minute: each pass reads at most the budget's room of Nodes fresh (10,
// then none until the minute is out), and the held nodes make at most 10
// RemedyHeldBack Events a minute, not one each.
func TestFreshReadsStayWithinTheBudget(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	p.MaxActionsPerMinute, p.MaxUnhealthy.StrVal = 10, "100%"
	var objs []runtime.Object
	for i := range 300 {
		objs = append(objs, node(fmt.Sprintf("n%03d", i), "RuntimeHung", corev1.ConditionTrue, t0, t0))
	}
	c, cs := newTestController(t, p, clk, objs...)
	rec := c.o.Recorder.(*record.FakeRecorder)
	ctx := context.Background()
	cs.ClearActions()
	c.Pass(ctx)
	if gets, got := nodeGets(cs), tainted(t, cs); gets != 10 || got != 10 {
		t.Fatalf("first pass: %d Node GETs, %d tainted; want 10 and 10", gets, got)
	}
	cs.ClearActions()
	events := heldEvents(rec)
	for range 59 {
		clk.Step(time.Second)
		c.Pass(ctx)
		if gets := nodeGets(cs); gets != 0 {
			t.Fatalf("at %v: %d Node GETs with the budget spent", clk.Since(t0), gets)
		}
	}
	events += heldEvents(rec)
	if events > heldEventsPerMinute {
		t.Errorf("%d RemedyHeldBack Events in a minute for 290 held nodes, want at most %d", events, heldEventsPerMinute)
	}
	clk.Step(time.Second)
	c.Pass(ctx)
	if gets, got := nodeGets(cs), tainted(t, cs); gets != 10 || got != 20 {
		t.Errorf("a minute later: %d Node GETs, %d tainted; want 10 and 20", gets, got)
	}
}

// TestAnUnreadableBudgetHoldsAndSays: a budget Lease whose record cannot
// be parsed holds every taint without reading a Node, and the metric says
// so until it is readable again.
func TestAnUnreadableBudgetHoldsAndSays(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hangwatch-remedy-actions", Namespace: "kube-system",
		Annotations: map[string]string{RecentActionsAnnotation: "{not json"}}}
	c, cs := newTestController(t, p, clk, lease, node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0))
	c.o.Budget = NewBudget(cs.CoordinationV1(), types.NamespacedName{Namespace: "kube-system", Name: "hangwatch-remedy-actions"}, "me")
	ctx := context.Background()
	cs.ClearActions()
	c.Pass(ctx)
	if gets, got := nodeGets(cs), tainted(t, cs); gets != 0 || got != 0 {
		t.Fatalf("unreadable budget: %d Node GETs, %d tainted; want none", gets, got)
	}
	if v, _ := testutil.GetGaugeMetricValue(c.o.Metrics.budgetUnreadable); v != 1 {
		t.Errorf("hangwatch_remedy_budget_unreadable = %v, want 1", v)
	}
	lease.Annotations[RecentActionsAnnotation] = "[]"
	if _, err := cs.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	c.Pass(ctx)
	if v, _ := testutil.GetGaugeMetricValue(c.o.Metrics.budgetUnreadable); v != 0 || tainted(t, cs) != 1 {
		t.Errorf("readable again: metric %v, %d tainted; want 0 and 1", v, tainted(t, cs))
	}
}

// TestMaintenanceIsNotAHang: a sick node whose DrainInProgress is True is
// neither tainted nor evicted, and says so once (RemedyStoodAside); once
// the drain is over, the plan taints it.
func TestMaintenanceIsNotAHang(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	n := node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0)
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DrainInProgress", Status: corev1.ConditionTrue})
	c, cs := newTestController(t, p, clk, n)
	rec := c.o.Recorder.(*record.FakeRecorder)
	ctx := context.Background()
	for range 3 {
		c.Pass(ctx)
		clk.Step(time.Second)
	}
	if got := tainted(t, cs); got != 0 {
		t.Fatalf("tainted %d nodes during a drain", got)
	}
	if rows := c.Last().Rows; len(rows) == 0 || rows[0].State != StateStoodAside {
		t.Errorf("rows %+v, want %s", rows, StateStoodAside)
	}
	var told []string
	for len(rec.Events) > 0 {
		told = append(told, <-rec.Events)
	}
	if len(told) != 1 || !strings.Contains(told[0], "RemedyStoodAside") || !strings.Contains(told[0], "DrainInProgress is True") {
		t.Errorf("Events %q, want one RemedyStoodAside naming DrainInProgress", told)
	}
	after := node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0) // the drain over
	after.Status.Conditions = append(after.Status.Conditions, corev1.NodeCondition{Type: "DrainInProgress", Status: corev1.ConditionFalse})
	if plan := Decide(p, []*corev1.Node{after}, c.clocks, clk.Now()); len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionTaint {
		t.Errorf("after the drain: actions %+v, want a taint", plan.Actions)
	}
}

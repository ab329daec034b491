package nodestatus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
)

type reporterFixture struct {
	t      *testing.T
	client *fake.Clientset
	clk    *testclock.FakeClock
	judge  *fakeJudge
	r      *Reporter
}

func newReporterFixture(t *testing.T, existing ...corev1.NodeCondition) *reporterFixture {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Conditions: append(
		[]corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}, existing...)}}
	f := &reporterFixture{t: t, client: fake.NewClientset(node), clk: testclock.NewFakeClock(t0)}
	f.judge = newFakeJudge(f.clk, map[string]conditions.Thresholds{conditions.TypeRuntimeHung: {RaiseAfter: 1, ClearAfter: 2}})
	f.r = NewReporter(clientsetNodes{f.client}, f.judge, ReporterConfig{Node: "node-a", Heartbeat: 5 * time.Minute,
		Coalesce: 100 * time.Millisecond, RetryMin: time.Second, RetryMax: 30 * time.Second, RequestTimeout: time.Second}, f.clk, nil)
	f.judge.subscribe(f.r)
	return f
}

func (f *reporterFixture) node() *corev1.Node {
	f.t.Helper()
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *reporterFixture) patches() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out = append(out, a.GetSubresource()+" "+string(p.GetPatch()))
		}
	}
	return out
}

func nodeCondition(n *corev1.Node, t string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func TestReporterWritesOnlyItsConditionsAndOnlyOnChange(t *testing.T) {
	f := newReporterFixture(t)
	ctx := context.Background()
	if err := f.r.restore(ctx); err != nil {
		t.Fatal(err)
	}
	f.judge.update(conditions.TypeRuntimeHung, t0, conditions.Evaluation{Bad: true, Reason: "ListPodSandboxHung", Message: "hung"})
	next := f.r.flush(ctx)
	p := f.patches()
	if len(p) != 1 || !strings.HasPrefix(p[0], "status ") || strings.Contains(p[0], "Ready") {
		t.Fatalf("patches %q: want one status patch without Ready", p)
	}
	n := f.node()
	if c := nodeCondition(n, conditions.TypeRuntimeHung); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "ListPodSandboxHung" {
		t.Fatalf("node conditions %+v", n.Status.Conditions)
	}
	if c := nodeCondition(n, "Ready"); c == nil || c.Reason != "KubeletReady" {
		t.Fatalf("Ready was touched: %+v", n.Status.Conditions)
	}
	if next != t0.Add(5*time.Minute) {
		t.Fatalf("next look %v, want the heartbeat", next)
	}
	f.clk.Step(time.Minute)
	f.judge.update(conditions.TypeRuntimeHung, f.clk.Now(), conditions.Evaluation{Bad: true, Reason: "ListPodSandboxHung", Message: "hung"})
	f.r.flush(ctx)
	if len(f.patches()) != 1 {
		t.Fatal("an unchanged state was written again")
	}
	f.clk.Step(4 * time.Minute)
	f.r.flush(ctx)
	if len(f.patches()) != 2 {
		t.Fatal("the heartbeat was not written")
	}
	if hb := nodeCondition(f.node(), conditions.TypeRuntimeHung).LastHeartbeatTime.Time; !hb.Equal(f.clk.Now()) {
		t.Fatalf("heartbeat %v", hb)
	}
}

func TestReporterCarriesOnTheNodesConditions(t *testing.T) {
	ltt := metav1.NewTime(t0.Add(-time.Hour))
	f := newReporterFixture(t, corev1.NodeCondition{Type: conditions.TypeRuntimeHung, Status: corev1.ConditionTrue,
		Reason: "RuntimeNotResponding", Message: "before the restart", LastTransitionTime: ltt})
	if err := f.r.restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.judge.update(conditions.TypeRuntimeHung, t0, conditions.Evaluation{Reason: "RuntimeResponsive", Message: "fine"}) // one good cycle of two
	f.r.flush(context.Background())
	c := nodeCondition(f.node(), conditions.TypeRuntimeHung)
	if c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&ltt) {
		t.Fatalf("after restart: %+v", c)
	}
}

func TestReporterKeepsTheStateWhileTheAPIServerFails(t *testing.T) {
	f := newReporterFixture(t)
	ctx := context.Background()
	_ = f.r.restore(ctx)
	down := true
	f.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f.judge.update(conditions.TypeRuntimeHung, t0, conditions.Evaluation{Bad: true, Reason: "StatusHung", Message: "hung"})
	var delays []time.Duration
	for range 6 {
		next := f.r.flush(ctx)
		delays = append(delays, next.Sub(f.clk.Now()))
		f.clk.SetTime(next)
	}
	for i, d := range delays {
		limit := min(time.Second<<i, 30*time.Second)
		if d < limit/2 || d > limit {
			t.Fatalf("retry %d after %v, want within [%v, %v]", i, d, limit/2, limit)
		}
	}
	f.judge.update(conditions.TypeRuntimeHung, f.clk.Now(), conditions.Evaluation{Bad: true, Reason: "RuntimeNotResponding", Message: "all hung"})
	down = false
	f.r.flush(ctx)
	if c := nodeCondition(f.node(), conditions.TypeRuntimeHung); c == nil || c.Reason != "RuntimeNotResponding" {
		t.Fatalf("the latest state was not flushed: %+v", c)
	}
}

func TestTransitionsWorthAnEvent(t *testing.T) {
	u := conditions.Condition{Status: conditions.StatusUnknown, Reason: conditions.ReasonNoData}
	ok := conditions.Condition{Status: conditions.StatusFalse, Reason: "Fine"}
	bad := conditions.Condition{Status: conditions.StatusTrue, Reason: "StatusHung"}
	worse := conditions.Condition{Status: conditions.StatusTrue, Reason: "RuntimeNotResponding"}
	for _, c := range []struct {
		before, after conditions.Condition
		want          string
	}{{u, ok, ""}, {u, bad, "Warning"}, {ok, bad, "Warning"}, {bad, worse, "Warning"}, {bad, ok, "Normal"}, {bad, bad, ""}} {
		got, _ := transitionType(c.before, c.after)
		if got != c.want {
			t.Errorf("%s/%s -> %s/%s: %q, want %q", c.before.Status, c.before.Reason, c.after.Status, c.after.Reason, got, c.want)
		}
	}
}

func TestNoEventForAConditionCarriedOnUnchanged(t *testing.T) {
	rec := &fakeEmitter{}
	e := &Events{emit: rec.emit, known: map[string]conditions.Condition{}}
	judge := newFakeJudge(testclock.NewFakeClock(t0), map[string]conditions.Thresholds{conditions.TypeRuntimeHung: {RaiseAfter: 1, ClearAfter: 2}, conditions.TypeKernelDeadlock: {RaiseAfter: 1, ClearAfter: 1}})
	judge.subscribe(e)
	move := func(condType string, v conditions.Evaluation) { judge.update(condType, t0, v) }
	// Before the Node is read back: the runtime is found hung again, and
	// the kernel is found clean.
	move(conditions.TypeRuntimeHung, conditions.Evaluation{Bad: true, Reason: "StatusHung", Message: "hung"})
	move(conditions.TypeKernelDeadlock, conditions.Evaluation{Reason: "KernelHasNoDeadlock", Message: "fine"})
	onNode := []conditions.Condition{
		{Type: conditions.TypeRuntimeHung, Status: conditions.StatusTrue, Reason: "StatusHung", Message: "hung before"},
		{Type: conditions.TypeKernelDeadlock, Status: conditions.StatusFalse, Reason: "KernelHasNoDeadlock", Message: "fine"},
	}
	judge.Restore(onNode)
	if got := drain(rec); got != "" {
		t.Fatalf("events for conditions carried on unchanged: %q", got)
	}
	move(conditions.TypeKernelDeadlock, conditions.Evaluation{Bad: true, Reason: "ContainerRuntimeTaskBlocked", Message: "blocked"})
	if got := drain(rec); got != "Warning ContainerRuntimeTaskBlocked Node condition KernelDeadlock is now True: blocked" {
		t.Fatalf("a change after the restore: %q", got)
	}

	// A restart that finds a problem the Node did not have tells it.
	e = &Events{emit: rec.emit, known: map[string]conditions.Condition{}}
	e.Judged(conditions.Judgement{Cause: conditions.CauseRestored, Conditions: judge.set.Snapshot(),
		OnNode: []conditions.Condition{onNode[0], {Type: conditions.TypeKernelDeadlock, Status: conditions.StatusFalse, Reason: "KernelHasNoDeadlock"}}})
	if got := drain(rec); got != "Warning ContainerRuntimeTaskBlocked Node condition KernelDeadlock is now True: blocked" {
		t.Fatalf("a change across the restart: %q", got)
	}
}

// fakeEmitter collects what Events emits.
type fakeEmitter struct{ events []string }

func (f *fakeEmitter) emit(eventType, reason, message string) {
	f.events = append(f.events, eventType+" "+reason+" "+message)
}

func drain(f *fakeEmitter) string {
	out := strings.Join(f.events, "; ")
	f.events = nil
	return out
}

func TestRefusedPatchIsRetriedSlowlyAndCounted(t *testing.T) {
	f := newReporterFixture(t)
	reg := metrics.NewKubeRegistry()
	f.r.metrics = NewReporterMetrics(reg)
	f.r.cfg.RejectedRetry = 30 * time.Second
	ctx := context.Background()
	_ = f.r.restore(ctx)
	var answer error
	f.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return answer != nil, nil, answer
	})
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "node-a",
		field.ErrorList{field.Forbidden(field.NewPath("status", "conditions"), "denied by policy hangwatch-own-node")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-a", errors.New("RBAC: no patch on nodes/status"))
	f.judge.update(conditions.TypeRuntimeHung, t0, conditions.Evaluation{Bad: true, Reason: "StatusHung", Message: "hung"})
	for i, err := range []error{invalid, invalid, forbidden, forbidden} {
		answer = err
		next := f.r.flush(ctx)
		if d := next.Sub(f.clk.Now()); d < 15*time.Second || d > 30*time.Second {
			t.Fatalf("refusal %d retried after %v, want 15s to 30s", i, d)
		}
		if !f.r.holdOff {
			t.Fatalf("refusal %d: a change would send the refused patch again at once", i)
		}
		f.clk.SetTime(next)
	}
	want := `
# HELP hangwatch_node_status_patch_refusals_total [ALPHA] Patches of the Node's status the API server refused (4xx other than 408 and 429: admission, RBAC, validation), by HTTP code; each is retried slowly.
# TYPE hangwatch_node_status_patch_refusals_total counter
hangwatch_node_status_patch_refusals_total{code="403"} 2
hangwatch_node_status_patch_refusals_total{code="422"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hangwatch_node_status_patch_refusals_total"); err != nil {
		t.Fatal(err)
	}
	answer = apierrors.NewTooManyRequests("slow down", 45)
	if d := f.r.flush(ctx).Sub(f.clk.Now()); d < 45*time.Second {
		t.Fatalf("429 with Retry-After 45 retried after %v", d)
	}
	answer = nil
	f.r.flush(ctx)
	if f.r.holdOff || f.r.failures != 0 || nodeCondition(f.node(), conditions.TypeRuntimeHung).Reason != "StatusHung" {
		t.Fatalf("not recovered: holdOff %v failures %d", f.r.holdOff, f.r.failures)
	}
}

package remedy

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"
)

// clientsetNodes lists the fake Clientset's nodes, as the informer would.
type clientsetNodes struct{ c *fake.Clientset }

func (l clientsetNodes) List() ([]*corev1.Node, error) {
	list, err := l.c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func newTestController(t *testing.T, p *Policy, clk *testclock.FakeClock, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	c := NewController(Options{Client: cs, Nodes: clientsetNodes{cs}, Policy: func() *Policy { return p },
		Recorder: record.NewFakeRecorder(1000), Metrics: NewMetrics(metrics.NewKubeRegistry()), Clock: clk})
	return c, cs
}

func tainted(t *testing.T, cs *fake.Clientset) int {
	t.Helper()
	nodes, err := clientsetNodes{cs}.List()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, node := range nodes {
		if hasOwnTaint(node, TaintKey("RuntimeHung")) {
			n++
		}
	}
	return n
}

// TestRateLimitSpreadsTaints: with maxActionsPerMinute 3, ten sick nodes
// are tainted 3 at once, then one every 20 s, on a fake clock.
func TestRateLimitSpreadsTaints(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	p.MaxActionsPerMinute, p.MaxUnhealthy.StrVal = 3, "100%"
	var objs []runtime.Object
	for i := 0; i < 10; i++ {
		objs = append(objs, node(fmt.Sprintf("n%d", i), "RuntimeHung", corev1.ConditionTrue, t0, t0))
	}
	c, cs := newTestController(t, p, clk, objs...)
	ctx := context.Background()
	c.Pass(ctx)
	if got := tainted(t, cs); got != 3 {
		t.Fatalf("first pass: %d tainted, want 3", got)
	}
	if held := len(c.Last().Withheld[GuardRateLimit]); held != 7 {
		t.Fatalf("rate limit held %d, want 7", held)
	}
	clk.Step(19 * time.Second)
	c.Pass(ctx)
	if got := tainted(t, cs); got != 3 {
		t.Fatalf("19s later: %d tainted", got)
	}
	clk.Step(time.Second)
	c.Pass(ctx)
	if got := tainted(t, cs); got != 4 {
		t.Fatalf("20s later: %d tainted, want 4", got)
	}
}

// TestDryRunChangesNothing: a dry run records what it would do.
func TestDryRunChangesNothing(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	p.DryRun = true
	c, cs := newTestController(t, p, clk, node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0))
	c.Pass(context.Background())
	if got := tainted(t, cs); got != 0 {
		t.Fatalf("a dry run tainted %d nodes", got)
	}
	rec := c.o.Recorder.(*record.FakeRecorder)
	select {
	case e := <-rec.Events:
		if e != "Normal RemedyDryRun would taint (hangwatch.io/runtime-hung): RuntimeHung has been True for 0s (taintAfter 0s): VersionHung" {
			t.Fatalf("event %q", e)
		}
	default:
		t.Fatal("no dry-run Event")
	}
}

// TestEvictionSkipsWhatMustStay evicts a node's Deployment pod and leaves
// its DaemonSet pod, its mirror pod and a pod on another node.
func TestEvictionSkipsWhatMustStay(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	yes := true
	pod := func(name, nodeName string, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: nodeName}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	n := taintOf(node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0.Add(2*time.Minute)), "RuntimeHung")
	c, cs := newTestController(t, DefaultPolicy(), clk, n,
		pod("web", "a", nil),
		pod("ds", "a", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &yes}}
		}),
		pod("static", "a", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("elsewhere", "b", nil))
	clk.Step(2 * time.Minute)
	c.Pass(context.Background())
	c.evict.wait()
	var evicted []string
	for _, a := range cs.Actions() {
		if a.GetSubresource() == "eviction" {
			evicted = append(evicted, a.(interface{ GetObject() runtime.Object }).GetObject().(interface{ GetName() string }).GetName())
		}
	}
	if fmt.Sprint(evicted) != "[web]" {
		t.Fatalf("evicted %v, want [web]", evicted)
	}
}

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

func (l clientsetNodes) Get(name string) (*corev1.Node, error) {
	return l.c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

func newTestController(t testing.TB, p *Policy, clk *testclock.FakeClock, objs ...runtime.Object) (*Controller, *fake.Clientset) {
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
// are tainted 3 at once, then no more until a minute has passed since the
// first, on a fake clock: never more than 3 in any minute.
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
	clk.Step(59 * time.Second)
	c.Pass(ctx)
	if got := tainted(t, cs); got != 3 {
		t.Fatalf("59s later: %d tainted", got)
	}
	clk.Step(time.Second)
	c.Pass(ctx)
	if got := tainted(t, cs); got != 6 {
		t.Fatalf("60s later: %d tainted, want 6", got)
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
// its DaemonSet pod, its mirror pod and a pod on another node, and, by the
// default policy, its StatefulSet pod, its pod with a ReadWriteOnce claim,
// its ownerless pod and its Job's pod, which an Event names.
func TestEvictionSkipsWhatMustStay(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	yes := true
	owned := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &yes}}
		}
	}
	pod := func(name, nodeName string, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: nodeName}}
		for _, mod := range mods {
			mod(p)
		}
		return p
	}
	rwo := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	n := taintOf(node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0), "RuntimeHung")
	c, cs := newTestController(t, DefaultPolicy(), clk, n, rwo,
		pod("web", "a", owned("ReplicaSet")),
		pod("ds", "a", owned("DaemonSet")),
		pod("static", "a", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("db-0", "a", owned("StatefulSet")),
		pod("bare", "a"),
		pod("batch", "a", owned("Job")),
		pod("cache", "a", owned("ReplicaSet"), func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}),
		pod("elsewhere", "b", owned("ReplicaSet")))
	c.Pass(context.Background())
	clk.Step(45 * time.Second)
	c.Pass(context.Background())
	c.evict.wait()
	if got := evicted(cs); fmt.Sprint(got) != "[web]" {
		t.Fatalf("evicted %v, want [web]", got)
	}
	want := "Warning RemedyLeftAlone left 4 pods on the node (the runtime's recovery or fencing moves them): " +
		"default/bare (no controller: it would not be recreated); default/batch (Job pod: its kind is not in the policy's eviction.kinds); " +
		"default/cache (ReadWriteOnce volume claim data: a replacement would wait on Multi-Attach); " +
		"default/db-0 (StatefulSet pod: recreated under its name only after the node confirms the old one is gone)"
	if !hasEvent(c, want) {
		t.Errorf("no Event %q", want)
	}
}

func evicted(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetSubresource() == "eviction" {
			out = append(out, a.(interface{ GetObject() runtime.Object }).GetObject().(interface{ GetName() string }).GetName())
		}
	}
	return out
}

// hasEvent drains the fake recorder looking for want.
func hasEvent(c *Controller, want string) bool {
	rec := c.o.Recorder.(*record.FakeRecorder)
	for {
		select {
		case e := <-rec.Events:
			if e == want {
				return true
			}
		default:
			return false
		}
	}
}

// TestEvictionPassesBackOffAndForgetTheirNode: while a node's pods stay,
// its eviction passes (each a LIST of that node's pods) come at once, then
// 2, 4, 8, 16 and 30 s apart; once its condition ends, nothing of the
// node's episode (its pods' 429 retry times included) is kept.
func TestEvictionPassesBackOffAndForgetTheirNode(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	n := taintOf(node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0), "RuntimeHung")
	c, cs := newTestController(t, DefaultPolicy(), clk, n)
	ctx := context.Background()
	c.Pass(ctx)
	clk.Step(45 * time.Second)
	var passes []time.Duration
	for s := 0; s <= 62; s++ {
		before := podLists(cs)
		c.Pass(ctx)
		c.evict.wait()
		if podLists(cs) > before {
			passes = append(passes, time.Duration(s)*time.Second)
		}
		clk.Step(time.Second)
	}
	if got := fmt.Sprint(passes); got != "[0s 2s 6s 14s 30s 1m0s]" {
		t.Fatalf("eviction passes at %s, want [0s 2s 6s 14s 30s 1m0s]", got)
	}
	c.evict.nodes["a"].notBefore["default/web"] = clk.Now().Add(time.Hour)
	live, err := cs.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := cs.CoreV1().Nodes().Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Pass(ctx)
	if len(c.evict.nodes) != 0 {
		t.Fatalf("the episode outlived its condition: %+v", c.evict.nodes)
	}
}

func podLists(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

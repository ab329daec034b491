package remedy

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// fencePolicy is the default policy with the fence on and no eviction.
func fencePolicy() *Policy {
	p := DefaultPolicy()
	p.Fence.Enabled = true
	p.Conditions[0].EvictAfter = nil
	return p
}

// fencible is node a, opted in, RuntimeHung True (RuntimeNotResponding)
// and PLEGUnhealthy True (RelistStalled) since t0, tainted, on boot b1.
func fencible(name string) *corev1.Node {
	n := taintOf(node(name, "RuntimeHung", corev1.ConditionTrue, t0, t0), "RuntimeHung")
	n.Status.Conditions[0].Reason = "RuntimeNotResponding"
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "PLEGUnhealthy", Status: corev1.ConditionTrue,
		Reason: "RelistStalled", LastTransitionTime: metav1.NewTime(t0), LastHeartbeatTime: metav1.NewTime(t0)})
	n.Labels = map[string]string{fencing.OptInLabel: fencing.OptInValue}
	n.Status.NodeInfo.BootID = "b1"
	return n
}

func fenceActs(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		if a.Condition == FenceRow {
			out = append(out, string(a.Kind)+" "+a.Node)
		}
	}
	return strings.Join(out, ", ")
}

func withAnnotations(n *corev1.Node, sets ...map[string]string) *corev1.Node {
	n = n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	for _, s := range sets {
		for k, v := range s {
			n.Annotations[k] = v
		}
	}
	return n
}

// TestFenceAsksAfterFenceAfterAndTaintsOnTheAttestation walks one node
// through the rung on a fake clock: asked at fence.after, out of service
// once the attestation answers the request on the same boot, unfenced a
// clearAfter after RuntimeHung turns False.
func TestFenceAsksAfterFenceAfterAndTaintsOnTheAttestation(t *testing.T) {
	p, k := fencePolicy(), NewClocks()
	n := fencible("a")
	decideAt(p, k, []*corev1.Node{n}, t0)
	if got := fenceActs(decideAt(p, k, []*corev1.Node{n}, t0.Add(44*time.Second))); got != "" {
		t.Fatalf("before fence.after: %q", got)
	}
	if got := fenceActs(decideAt(p, k, []*corev1.Node{n}, t0.Add(45*time.Second))); got != "fence a" {
		t.Fatalf("at fence.after: %q", got)
	}
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: t0.Add(105 * time.Second), ValidFor: time.Minute}
	asked := withAnnotations(n, req.Annotations())
	if got := fenceActs(decideAt(p, k, []*corev1.Node{asked}, t0.Add(50*time.Second))); got != "" {
		t.Fatalf("asked, not yet attested: %q", got)
	}
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", Pods: []string{"aa-1"}, At: t0.Add(52 * time.Second), Outcome: fencing.OutcomeFenced}
	attested := withAnnotations(asked, att.Annotations())
	if got := fenceActs(decideAt(p, k, []*corev1.Node{attested}, t0.Add(53*time.Second))); got != "out-of-service a" {
		t.Fatalf("attested: %q", got)
	}
	rebooted := attested.DeepCopy()
	rebooted.Status.NodeInfo.BootID = "b2"
	if got := fenceActs(decideAt(p, k, []*corev1.Node{rebooted}, t0.Add(53*time.Second))); got != "withdraw-fence a" {
		t.Fatalf("attested on another boot: %q", got)
	}
	out := attested.DeepCopy()
	out.Spec.Taints = append(out.Spec.Taints, fencing.OutOfService())
	healthy := out.DeepCopy()
	healthy.Status.Conditions[0].Status = corev1.ConditionFalse
	if got := fenceActs(decideAt(p, k, []*corev1.Node{healthy}, t0.Add(60*time.Second))); got != "" {
		t.Fatalf("just healthy: %q", got)
	}
	if got := fenceActs(decideAt(p, k, []*corev1.Node{healthy}, t0.Add(121*time.Second))); got != "unfence a" {
		t.Fatalf("healthy for clearAfter: %q", got)
	}
}

// TestFenceGuards: no opt-in, a reason of one object, KernelDeadlock,
// someone else's out-of-service taint, maxFencedNodes and a request past
// its deadline.
func TestFenceGuards(t *testing.T) {
	at := t0.Add(time.Minute)
	p := fencePolicy()
	plain := fencible("a")
	delete(plain.Labels, fencing.OptInLabel)
	if got := fenceActs(decideAt(p, NewClocks(), []*corev1.Node{plain}, t0)); got != "" {
		t.Errorf("no opt-in: %q", got)
	}
	oneObject := fencible("a")
	oneObject.Status.Conditions[0].Reason = "ContainerStatusHung"
	k := NewClocks()
	decideAt(p, k, []*corev1.Node{oneObject}, t0)
	if got := fenceActs(decideAt(p, k, []*corev1.Node{oneObject}, at)); got != "" {
		t.Errorf("ContainerStatusHung: %q", got)
	}
	// nothing listens after the node's repair restarted it: asked (the
	// node carries it out only then, and leaves a stopped runtime alone)
	unreachable := fencible("a")
	unreachable.Status.Conditions[0].Reason = "RuntimeUnreachable"
	k = NewClocks()
	decideAt(p, k, []*corev1.Node{unreachable}, t0)
	if got := fenceActs(decideAt(p, k, []*corev1.Node{unreachable}, at)); got != "fence a" {
		t.Errorf("RuntimeUnreachable: %q, want the fence asked", got)
	}
	deadlocked := fencible("a")
	deadlocked.Status.Conditions = append(deadlocked.Status.Conditions, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionTrue})
	other := fencible("b")
	other.Spec.Taints = append(other.Spec.Taints, corev1.Taint{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	c, d := fencible("c"), fencible("d")
	p.MaxUnhealthy.StrVal = "100%"
	k = NewClocks()
	nodes := []*corev1.Node{deadlocked, other, c, d}
	decideAt(p, k, nodes, t0)
	plan := decideAt(p, k, nodes, at)
	if got := fenceActs(plan); got != "fence c" {
		t.Errorf("four nodes due: %q, want only c", got)
	}
	for guard, node := range map[string]string{GuardKernelDeadlock: "a", GuardOtherFencer: "b", GuardMaxFenced: "d"} {
		if held := plan.Withheld[guard]; len(held) != 1 || held[0].Node != node {
			t.Errorf("withheld by %s: %+v, want node %s", guard, held, node)
		}
	}
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: at, ValidFor: time.Minute}
	late := withAnnotations(fencible("a"), req.Annotations())
	if got := fenceActs(decideAt(p, NewClocks(), []*corev1.Node{late}, at)); got != "withdraw-fence a" {
		t.Errorf("past the deadline: %q", got)
	}
}

// TestFenceImpossibleIsNotAskedAgainOnTheSameBoot: the node's answer
// withdraws the request, and the node is not asked again until it boots
// again or RuntimeHung clears.
func TestFenceImpossibleIsNotAskedAgainOnTheSameBoot(t *testing.T) {
	p, k := fencePolicy(), NewClocks()
	at := t0.Add(time.Minute)
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: at.Add(time.Minute), ValidFor: time.Minute}
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", At: at, Outcome: fencing.OutcomeImpossible, Why: "pid 9 (dd) is in D state"}
	n := withAnnotations(fencible("a"), req.Annotations(), att.Annotations())
	decideAt(p, k, []*corev1.Node{n}, t0)
	plan := decideAt(p, k, []*corev1.Node{n}, at)
	if got := fenceActs(plan); got != "withdraw-fence a" || !strings.Contains(plan.Actions[len(plan.Actions)-1].Why, "D state") {
		t.Fatalf("impossible: %q %+v", got, plan.Actions)
	}
	for _, key := range fencing.RequestAnnotations {
		delete(n.Annotations, key)
	}
	if got := fenceActs(decideAt(p, k, []*corev1.Node{n}, at.Add(time.Minute))); got != "" {
		t.Errorf("asked again on the same boot: %q", got)
	}
}

func TestFencePolicyValidation(t *testing.T) {
	p := fencePolicy()
	p.Fence.MaxFencedNodes = 0
	p.Fence.After.Duration = time.Second
	p.Conditions = p.Conditions[1:]
	got := Validate(p)
	for _, want := range []string{"fence.maxFencedNodes", "fence.after", "fence.enabled"} {
		found := false
		for _, err := range got {
			found = found || strings.HasPrefix(err.Error(), want)
		}
		if !found {
			t.Errorf("no error names %s: %v", want, got)
		}
	}
}

// TestFenceMaxFencedHoldsAcrossIncrementalPasses: a pass that plans only
// the node that changed still counts the node already fenced.
func TestFenceMaxFencedHoldsAcrossIncrementalPasses(t *testing.T) {
	p, k, v := fencePolicy(), NewClocks(), newView()
	p.MaxUnhealthy.StrVal = "100%"
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: t0.Add(time.Hour), ValidFor: time.Minute}
	a, b := withAnnotations(fencible("a"), req.Annotations()), fencible("b")
	k.Observe(p, []*corev1.Node{a, b}, t0, true)
	v.plan(p, []*corev1.Node{a, b}, true, k, t0)
	at := t0.Add(time.Minute)
	k.Observe(p, []*corev1.Node{b}, at, false)
	plan := v.plan(p, []*corev1.Node{b}, false, k, at)
	if got := fenceActs(plan); got != "" || len(plan.Withheld[GuardMaxFenced]) != 1 {
		t.Fatalf("b planned alone while a is asked: %q, withheld %v", got, plan.Withheld)
	}
}

// TestFenceRequestWaitsForTheLeaseToMove: on a fake Clientset, the request
// is written only once the controller has seen the node's Lease renewed on
// its own clock; a dry run only tells.
func TestFenceRequestWaitsForTheLeaseToMove(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		clk := testclock.NewFakeClock(t0)
		p := fencePolicy()
		p.DryRun = dryRun
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t0}}}
		c, cs := newTestController(t, p, clk, fencible("a"), lease)
		ctx := context.Background()
		asked := func() bool {
			n, _ := cs.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
			return n.Annotations[fencing.RequestAnnotation] != ""
		}
		c.Pass(ctx)
		clk.Step(50 * time.Second) // past fence.after; the Lease has not moved
		c.Pass(ctx)
		if asked() {
			t.Fatal("asked with a Lease never seen renewed")
		}
		lease.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(50 * time.Second)}
		if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.Step(leaseReadEvery)
		c.Pass(ctx)
		if asked() == dryRun {
			t.Errorf("dry run %v: asked %v", dryRun, asked())
		}
		if dryRun && !hasEventPrefix(c, "Normal RemedyDryRun would fence: ") {
			t.Error("no dry-run Event for the fence")
		}
	}
}

func hasEventPrefix(c *Controller, prefix string) bool {
	rec := c.o.Recorder.(*record.FakeRecorder)
	for {
		select {
		case e := <-rec.Events:
			if strings.HasPrefix(e, prefix) {
				return true
			}
		default:
			return false
		}
	}
}

// TestFenceAsksOnlyWhenThePodLifecycleIsStuck: RuntimeHung without the
// relist stalled (ImageFsInfo held alone, calls that answer late), or for
// one container's call, is never asked to fence, however long it lasts.
func TestFenceAsksOnlyWhenThePodLifecycleIsStuck(t *testing.T) {
	for name, change := range map[string]func(n *corev1.Node){
		"ImageFsInfo alone": func(n *corev1.Node) {
			n.Status.Conditions[0].Reason = "ImageFsInfoHung"
			n.Status.Conditions[1].Status, n.Status.Conditions[1].Reason = corev1.ConditionFalse, "RelistHealthy"
		},
		"one container": func(n *corev1.Node) { n.Status.Conditions[0].Reason = "ContainerStatusHung" },
		"the relist answers": func(n *corev1.Node) {
			n.Status.Conditions[1].Status, n.Status.Conditions[1].Reason = corev1.ConditionFalse, "RelistHealthy"
		},
		"the relist slow, not stalled": func(n *corev1.Node) { n.Status.Conditions[1].Reason = "RelistSlow" },
	} {
		t.Run(name, func(t *testing.T) {
			p, k := fencePolicy(), NewClocks()
			n := fencible("a")
			change(n)
			decideAt(p, k, []*corev1.Node{n}, t0)
			if got := fenceActs(decideAt(p, k, []*corev1.Node{n}, t0.Add(3*time.Minute))); got != "" {
				t.Fatalf("asked: %q", got)
			}
		})
	}
}

// TestFenceImpossibleHoldsForItsSpellOnly: an Impossible answer given
// before RuntimeHung last turned True (both on the node's clock) does not
// hold back a new spell.
func TestFenceImpossibleHoldsForItsSpellOnly(t *testing.T) {
	p, k := fencePolicy(), NewClocks()
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", At: t0.Add(-time.Minute), Outcome: fencing.OutcomeImpossible, Why: "the runtime answers on its socket"}
	n := withAnnotations(fencible("a"), att.Annotations())
	decideAt(p, k, []*corev1.Node{n}, t0)
	if got := fenceActs(decideAt(p, k, []*corev1.Node{n}, t0.Add(45*time.Second))); got != "fence a" {
		t.Fatalf("a new spell after an earlier spell's Impossible: %q, want fence a", got)
	}
}

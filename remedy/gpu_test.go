package remedy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
)

// TestAGPUFaultTaintsAndEvictsOnlyThePodsUsingAGPU: with the shipped
// policy, GPUUnavailable taints the node with a key of its own and evicts
// the pods that request nvidia.com/gpu; a pod that does not keeps running
// and is not named; a pod holding devices through a resource claim is
// left, and the Event says why. No other action: no fence, nothing for
// the runtime.
func TestAGPUFaultTaintsAndEvictsOnlyThePodsUsingAGPU(t *testing.T) {
	shipped := shippedPolicy(t)
	clk := testclock.NewFakeClock(t0)
	yes := true
	pod := func(name string, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "gpu-1", Containers: []corev1.Container{{Name: "c"}}}}
		for _, mod := range mods {
			mod(p)
		}
		return p
	}
	gpus := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: resource.MustParse("1")}
	}
	claims := func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	}
	c, cs := newTestController(t, shipped, clk, node("gpu-1", "GPUUnavailable", corev1.ConditionTrue, t0, t0))
	c.Pass(context.Background())
	got, err := cs.CoreV1().Nodes().Get(context.Background(), "gpu-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasOwnTaint(got, "hangwatch.io/gpu-unavailable") || len(got.Spec.Taints) != 1 {
		t.Fatalf("taints %v; want hangwatch.io/gpu-unavailable alone", got.Spec.Taints)
	}

	n := taintOf(node("gpu-1", "GPUUnavailable", corev1.ConditionTrue, t0, t0), "GPUUnavailable")
	c, cs = newTestController(t, shipped, clk, n, pod("train", gpus), pod("web"), pod("dra", claims))
	c.Pass(context.Background())
	c.evict.wait()
	if ev := evicted(cs); fmt.Sprint(ev) != "[train]" {
		t.Fatalf("evicted %v; want [train], the pod using a GPU", ev)
	}
	want := "Warning RemedyLeftAlone left 1 pods on the node (the runtime's recovery or fencing moves them): " +
		"ml/dra (it holds devices through resource claims, and which it holds is not told: the eviction is only for pods using nvidia.com/gpu)"
	if !hasEvent(c, want) {
		t.Errorf("no Event %q", want)
	}
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			if s := string(p.GetPatch()); strings.Contains(s, "fence") || strings.Contains(s, "out-of-service") {
				t.Errorf("a GPU fault asked for a fence: %s", s)
			}
		}
	}
}

func TestGPUDegradedTaintsAndEvictsNothing(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	n := node("gpu-1", "GPUDegraded", corev1.ConditionTrue, t0, t0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml"}, Spec: corev1.PodSpec{NodeName: "gpu-1",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: resource.MustParse("1")}}}}}}
	c, cs := newTestController(t, shippedPolicy(t), clk, n, p)
	for range 3 {
		c.Pass(context.Background())
		clk.Step(10 * time.Minute)
	}
	c.evict.wait()
	got, _ := cs.CoreV1().Nodes().Get(context.Background(), "gpu-1", metav1.GetOptions{})
	if !hasOwnTaint(got, "hangwatch.io/gpu-degraded") {
		t.Fatalf("taints %v; want hangwatch.io/gpu-degraded", got.Spec.Taints)
	}
	if ev := evicted(cs); len(ev) != 0 {
		t.Fatalf("evicted %v for a degraded GPU", ev)
	}
}

// shippedPolicy is manifests/overlays/remedy's policy, as
// hangwatch-remedy loads it.
func shippedPolicy(t *testing.T) *Policy {
	t.Helper()
	p, err := LoadPolicyFile("../manifests/overlays/remedy/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

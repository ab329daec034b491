package manager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// markedNode is a Node with everything hangwatch writes on one (its
// conditions, remedy's taint, the fence's out-of-service taint and
// annotations) beside what others wrote there.
func markedNode(name string) *corev1.Node {
	n := hungNode(name, corev1.ConditionTrue)
	n.Status.Conditions = append(n.Status.Conditions,
		corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionFalse})
	n.Spec.Taints = []corev1.Taint{
		{Key: "hangwatch.io/runtime-hung", Value: "hangwatch-remedy", Effect: corev1.TaintEffectNoSchedule},
		{Key: "hangwatch.io/runtime-hung", Value: "someone-else", Effect: corev1.TaintEffectNoSchedule},
		fencing.OutOfService(),
		{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute},
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	n.Annotations = map[string]string{fencing.RequestAnnotation: "f1-ab", fencing.AttestedAnnotation: "f1-ab", "hangwatch.io/remedy": "disabled"}
	return n
}

// installObjects are what the shipped remedy overlay names hangwatch-remedy.
func installObjects() []runtime.Object {
	meta := metav1.ObjectMeta{Name: "hangwatch-remedy", Namespace: "kube-system"}
	cluster := metav1.ObjectMeta{Name: "hangwatch-remedy"}
	return []runtime.Object{&appsv1.Deployment{ObjectMeta: meta}, &corev1.ServiceAccount{ObjectMeta: meta},
		&rbacv1.ClusterRole{ObjectMeta: cluster}, &rbacv1.ClusterRoleBinding{ObjectMeta: cluster},
		&coordinationv1.Lease{ObjectMeta: meta}, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hangwatch-remedy-actions", Namespace: "kube-system"}}}
}

// finalizers tells, for each held object and the guard Lease, whether it
// carries the finalizer that holds it.
func (p *inProcess) finalizers(t *testing.T) map[string]bool {
	t.Helper()
	held := map[string]bool{}
	for _, h := range heldObjects(p.api, "kube-system", "hangwatch-remedy") {
		o, err := h.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held[h.what] = slices.Contains(o.GetFinalizers(), h.finalizer)
	}
	for _, kind := range []string{"serviceaccount", "clusterrolebinding", "clusterrole"} {
		l, err := p.api.CoordinationV1().Leases("kube-system").Get(context.Background(), "hangwatch-remedy-uninstall-"+kind, metav1.GetOptions{})
		held["guard of the "+kind] = err == nil && slices.Contains(l.Finalizers, UninstallFinalizer) && len(l.OwnerReferences) == 1 &&
			strings.EqualFold(l.OwnerReferences[0].Kind, kind) && *l.OwnerReferences[0].BlockOwnerDeletion
	}
	return held
}

func allAre(held map[string]bool, want bool) bool {
	for _, h := range held {
		if h != want {
			return false
		}
	}
	return len(held) > 0
}

func TestUninstallTakesHangwatchsMarksOffTheNodesThenLetsTheInstallGo(t *testing.T) {
	dir := t.TempDir()
	writePolicy(t, dir+"/policy.yaml", "dryRun: true\n")
	objs := append(installObjects(), markedNode("node-a"), markedNode("node-b"))
	p := startInProcess(t, Options{Uninstall: "hangwatch-remedy", PolicyPath: dir + "/policy.yaml",
		Election: Election{Namespace: "kube-system", Name: "hangwatch-remedy"}}, objs...)
	p.until(t, "the install held", func() bool { return allAre(p.finalizers(t), true) })

	ctx := context.Background()
	d, err := p.api.AppsV1().Deployments("kube-system").Get(ctx, "hangwatch-remedy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(managerT0)
	d.DeletionTimestamp = &now // kubectl delete -k: the finalizer keeps it
	if _, err := p.api.AppsV1().Deployments("kube-system").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the Deployment and the guard let go; the rest is the garbage
	// collector's (foregroundDeletion, once the guard is gone)
	p.until(t, "the install let go", func() bool {
		held := p.finalizers(t)
		return !held["deployment/kube-system/hangwatch-remedy"] && !held["guard of the serviceaccount"] &&
			!held["guard of the clusterrole"] && !held["guard of the clusterrolebinding"]
	})
	for what, h := range p.finalizers(t) {
		if strings.HasPrefix(what, "clusterrole") || strings.HasPrefix(what, "serviceaccount") {
			if !h {
				t.Errorf("%s let go before the garbage collector: its foregroundDeletion finalizer is the collector's to take off", what)
			}
		}
	}

	for _, name := range []string{"node-a", "node-b"} {
		n, err := p.api.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var types []corev1.NodeConditionType
		for _, c := range n.Status.Conditions {
			types = append(types, c.Type)
		}
		if !slices.Equal(types, []corev1.NodeConditionType{corev1.NodeReady}) {
			t.Errorf("%s: conditions %v, want only the kubelet's Ready", name, types)
		}
		want := []corev1.Taint{
			{Key: "hangwatch.io/runtime-hung", Value: "someone-else", Effect: corev1.TaintEffectNoSchedule},
			{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		if !slices.EqualFunc(n.Spec.Taints, want, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
			t.Errorf("%s: taints %v, want only others' %v", name, n.Spec.Taints, want)
		}
		if len(n.Annotations) != 1 || n.Annotations["hangwatch.io/remedy"] != "disabled" {
			t.Errorf("%s: annotations %v, want only the operator's opt-out", name, n.Annotations)
		}
	}
	for _, name := range []string{"hangwatch-remedy", "hangwatch-remedy-actions"} {
		if _, err := p.api.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("Lease %s still there after the uninstall", name)
		}
	}
	select {
	case err := <-p.done:
		t.Fatalf("Run returned after the uninstall (%v): its pod would start again until the garbage collector deletes it", err)
	default:
	}
	if err := p.stopped(t); err != nil {
		t.Fatalf("Run after the uninstall: %v", err)
	}
}

func TestNoInstallNamedHoldsNothingAndTakesNothingOff(t *testing.T) {
	p := startInProcess(t, Options{Election: Election{Namespace: "kube-system", Name: "hangwatch-remedy"}},
		append(installObjects(), markedNode("node-a"))...)
	p.until(t, "ten seconds on", func() bool { return p.clk.Now().After(managerT0.Add(10 * time.Second)) })
	if held := p.finalizers(t); !allAre(held, false) {
		t.Fatalf("finalizers %v without --install-name", held)
	}
	n, err := p.api.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Status.Conditions) != 3 {
		t.Fatalf("conditions %v: want the three written", n.Status.Conditions)
	}
}

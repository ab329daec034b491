package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestRemedyTakesOnlyHangwatchsConditionsOffAStatus: the remedy
// ServiceAccount may write a Node's status (an uninstall does) only to
// take hangwatch's conditions off: not the kubelet's Ready, not a changed
// or added condition, not another field of the status (each refusal
// names what); and once RuntimeHung is off, its out-of-service taint may
// go.
func TestRemedyTakesOnlyHangwatchsConditionsOffAStatus(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies, harness.LaneRemedyBudget)
	cp := harness.SharedControlPlane(t)
	cs := harness.ClientFor(t, harness.RemedyIdentity(t, cp))
	f := newFleet(t, cp, 1)
	ctx, node := context.Background(), f.names[0]
	f.write(t, 0, "Ready", "kubelet", corev1.ConditionTrue, time.Now(), time.Now())
	f.set(t, 0, corev1.ConditionTrue, time.Now())
	// the base's condition-writers policy too, which holds everyone but
	// hangwatch on the node off its conditions (and lets remedy take them off)
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "base"))
	other := statusWriter(ctx, t, cp)
	var err error
	_, _ = harness.Poll(ctx, time.Minute, "the condition-writers policy enforced", func() bool {
		err = patchNamedCondition(ctx, other, node, "RuntimeHung", "hangwatch")
		return err != nil && strings.Contains(err.Error(), "only hangwatch on node")
	}, harness.Every(200*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "only hangwatch on node") {
		t.Fatalf("the condition-writers policy not enforced within a minute: %v", err)
	}
	denied := map[string]struct {
		change func(*corev1.Node)
		want   string
	}{
		"the kubelet's Ready taken off": {func(n *corev1.Node) { n.Status.Conditions = without(n.Status.Conditions, "Ready") }, "not add or change one"},
		"RuntimeHung made False": {func(n *corev1.Node) {
			n.Status.Conditions = without(n.Status.Conditions, "RuntimeHung")
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "RuntimeHung", Status: corev1.ConditionFalse})
		}, "RuntimeHung"},
		"an address": {func(n *corev1.Node) {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.7"})
		}, "status.addresses"},
	}
	for what, d := range denied {
		err = writeStatus(ctx, cs, node, d.change)
		if err == nil || !strings.Contains(err.Error(), d.want) {
			t.Errorf("remedy writing the status, %s: %v; want the policy's denial naming %q", what, err, d.want)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
	if err := writeStatus(ctx, cs, node, func(n *corev1.Node) { n.Status.Conditions = without(n.Status.Conditions, "RuntimeHung") }); err != nil {
		t.Fatalf("remedy taking RuntimeHung off the status: %v", err)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != corev1.NodeReady || len(n.Status.Addresses) != 0 {
		t.Fatalf("status after: %+v; want Ready alone, no address", n.Status)
	}
}

// without is conds but those of type typ.
func without(conds []corev1.NodeCondition, typ corev1.NodeConditionType) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	return out
}

// writeStatus sends the status change as remedy's uninstall does: a JSON
// patch of the status subresource on the resourceVersion just read.
func writeStatus(ctx context.Context, cs kubernetes.Interface, node string, change func(*corev1.Node)) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	change(n)
	ops, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": n.ResourceVersion},
		{"op": "add", "path": "/status/conditions", "value": n.Status.Conditions},
		{"op": "add", "path": "/status/addresses", "value": n.Status.Addresses},
	})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, ops, metav1.PatchOptions{}, "status")
	return err
}

// TestRemedyChangesOnlyItsFinalizerOnItsInstall: the remedy
// ServiceAccount may put hangwatch.io/uninstall on its install's
// Deployment, ServiceAccount, ClusterRole and ClusterRoleBinding and take
// it off, and change nothing else there: not the Deployment's pod
// template, not the binding's subjects, not the role's rules, not
// another finalizer.
func TestRemedyChangesOnlyItsFinalizerOnItsInstall(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies)
	cp := harness.SharedControlPlane(t)
	cs := harness.ClientFor(t, harness.RemedyIdentity(t, cp))
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hangwatch-remedy", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "r"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "r"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "r", Image: "hangwatch.local/hangwatch:v0.1.0"}}}}}}
	if _, err := cp.Admin.AppsV1().Deployments("kube-system").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.AppsV1().Deployments("kube-system").Delete(context.Background(), "hangwatch-remedy", metav1.DeleteOptions{})
	})
	patch := func(kind, p string) error {
		var err error
		pt, o := types.MergePatchType, metav1.PatchOptions{}
		switch kind {
		case "deployment":
			_, err = cs.AppsV1().Deployments("kube-system").Patch(ctx, "hangwatch-remedy", pt, []byte(p), o)
		case "serviceaccount":
			_, err = cs.CoreV1().ServiceAccounts("kube-system").Patch(ctx, "hangwatch-remedy", pt, []byte(p), o)
		case "clusterrole":
			_, err = cs.RbacV1().ClusterRoles().Patch(ctx, "hangwatch-remedy", pt, []byte(p), o)
		default:
			_, err = cs.RbacV1().ClusterRoleBindings().Patch(ctx, "hangwatch-remedy", pt, []byte(p), o)
		}
		return err
	}
	denied := map[string]struct{ kind, patch, want string }{
		"the Deployment's ServiceAccount": {"deployment", `{"spec":{"template":{"spec":{"serviceAccountName":"default"}}}}`, "not spec"},
		"the binding's subjects": {"clusterrolebinding",
			`{"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"default"}]}`, "not subjects"},
		"the role's rules":  {"clusterrole", `{"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}]}`, "not rules"},
		"another finalizer": {"serviceaccount", `{"metadata":{"finalizers":["example.com/hold"]}}`, "may add only hangwatch.io/uninstall"},
		"a label with it":   {"deployment", `{"metadata":{"labels":{"x":"y"},"finalizers":["hangwatch.io/uninstall"]}}`, "not metadata.labels"},
	}
	for what, d := range denied {
		err := patch(d.kind, d.patch)
		if err == nil || !strings.Contains(err.Error(), d.want) {
			t.Errorf("remedy writing %s: %v; want the policy's denial naming %q", what, err, d.want)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
	for _, kind := range []string{"deployment", "serviceaccount", "clusterrole", "clusterrolebinding"} {
		for _, fin := range []string{`["hangwatch.io/uninstall"]`, `null`, `["foregroundDeletion"]`} {
			if err := patch(kind, fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, fin)); err != nil {
				t.Errorf("remedy setting %s's finalizers to %s: %v", kind, fin, err)
			}
		}
		err := patch(kind, `{"metadata":{"finalizers":null}}`)
		if err == nil || !strings.Contains(err.Error(), "remove only hangwatch.io/uninstall") {
			t.Errorf("remedy taking the garbage collector's foregroundDeletion off %s: %v; want the policy's denial", kind, err)
		}
	}
	// the garbage collector's finalizer off again, as an administrator
	unhold := []byte(`{"metadata":{"finalizers":null}}`)
	_, err1 := cp.Admin.AppsV1().Deployments("kube-system").Patch(ctx, "hangwatch-remedy", types.MergePatchType, unhold, metav1.PatchOptions{})
	_, err2 := cp.Admin.CoreV1().ServiceAccounts("kube-system").Patch(ctx, "hangwatch-remedy", types.MergePatchType, unhold, metav1.PatchOptions{})
	_, err3 := cp.Admin.RbacV1().ClusterRoles().Patch(ctx, "hangwatch-remedy", types.MergePatchType, unhold, metav1.PatchOptions{})
	_, err4 := cp.Admin.RbacV1().ClusterRoleBindings().Patch(ctx, "hangwatch-remedy", types.MergePatchType, unhold, metav1.PatchOptions{})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
}

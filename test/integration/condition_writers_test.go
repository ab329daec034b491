package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestOnlyHangwatchWritesItsConditions applies the base's condition-writers
// policy for real: an identity that may patch every Node's status (as
// node-problem-detector's or a CNI agent's may) is refused a change to
// RuntimeHung, however it names its field manager, and keeps writing its
// own conditions; the node's own identity, as hangwatch's static pod
// writes, may.
func TestOnlyHangwatchWritesItsConditions(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies)
	cp := hangwatch.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "base"))
	node := hangwatch.UniqueNode("writers")
	kc := hangwatch.CreateNode(t, cp, node)
	other := statusWriter(ctx, t, cp)
	var err error
	_, _ = harness.Poll(ctx, time.Minute, "the policy to refuse another writer's RuntimeHung", func() bool {
		err = patchNamedCondition(ctx, other, node, "RuntimeHung", "hangwatch")
		return err != nil && strings.Contains(err.Error(), "only hangwatch on node")
	}, harness.Every(200*time.Millisecond))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not change RuntimeHung") {
		t.Fatalf("another identity writing RuntimeHung as field manager hangwatch: %v; want the policy's denial naming it", err)
	}
	t.Logf("another writer: %v", err)
	if err := patchNamedCondition(ctx, other, node, "ExampleProblem", "example-agent"); err != nil {
		t.Errorf("another identity writing a condition of its own: %v", err)
	}
	if err := patchNamedCondition(ctx, harness.ClientFor(t, kc), node, "RuntimeHung", "hangwatch"); err != nil {
		t.Errorf("the node's own identity writing RuntimeHung: %v", err)
	}
}

// statusWriter is a ServiceAccount allowed by RBAC to patch every Node's
// status, and nothing else.
func statusWriter(ctx context.Context, t *testing.T, cp *harness.ControlPlane) kubernetes.Interface {
	t.Helper()
	name := hangwatch.UniqueNode("status-writer")
	rbac := cp.Admin.RbacV1()
	_, err := cp.Admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err == nil {
		_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}}}}, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: name}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return cp.TokenClient(t, cp.Token(t, "default", name, nil))
}

// patchNamedCondition writes condType True on node as field manager.
func patchNamedCondition(ctx context.Context, c kubernetes.Interface, node, condType, manager string) error {
	now := metav1.Now().Rfc3339Copy().Format(time.RFC3339)
	body := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"Test","message":"set by the test",`+
		`"lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, condType, now, now)
	_, err := c.CoreV1().Nodes().Patch(ctx, node, "application/strategic-merge-patch+json", []byte(body), metav1.PatchOptions{FieldManager: manager}, "status")
	return err
}

// TestConditionWritersHoldInTheStaticPodInstall starts an API server of its
// own and applies the static-pod overlay alone, so that no other policy of
// hangwatch's is there (the DaemonSet overlay's hangwatch.io-own-node-only
// in particular): the condition-writers policy must hold by itself. A
// ServiceAccount named as the DaemonSet's (left over from a DaemonSet
// install, or made by whoever may create ServiceAccounts in kube-system),
// allowed by RBAC to patch every Node's status, may write hangwatch's
// conditions only on the node its token is bound to: refused on another
// node and with a token bound to no pod. A kernelDeadlockWriter may write
// KernelDeadlock alone, and only on its token's node.
func TestConditionWritersHoldInTheStaticPodInstall(t *testing.T) {
	harness.Parallel(t)
	harness.RequireRealParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp, err := harness.StartControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	a, b := hangwatch.UniqueNode("writers-a"), hangwatch.UniqueNode("writers-b")
	kcA := hangwatch.CreateNode(t, cp, a)
	hangwatch.CreateNode(t, cp, b)
	mayPatchNodeStatus(ctx, t, cp, "kube-system", "hangwatch")
	hw := cp.TokenClient(t, cp.NodeBoundToken(t, "kube-system", "hangwatch", a))
	_, _ = harness.Poll(ctx, time.Minute, "the policy to refuse hangwatch's ServiceAccount on another node", func() bool {
		err = patchNamedCondition(ctx, hw, b, "RuntimeHung", "hangwatch")
		return err != nil && strings.Contains(err.Error(), "only hangwatch on node")
	}, harness.Every(200*time.Millisecond))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not change RuntimeHung in status.conditions") ||
		!strings.Contains(err.Error(), "bound to node "+a) {
		t.Errorf("hangwatch's ServiceAccount, its token bound to node %s, writing RuntimeHung on %s: %v; want the policy's denial naming it", a, b, err)
	} else {
		t.Logf("another node: %v", err)
	}
	if err := patchNamedCondition(ctx, hw, a, "RuntimeHung", "hangwatch"); err != nil {
		t.Errorf("hangwatch's ServiceAccount on the node its token is bound to: %v", err)
	}
	unbound := cp.TokenClient(t, cp.Token(t, "kube-system", "hangwatch", nil))
	if err := patchNamedCondition(ctx, unbound, a, "PLEGUnhealthy", "hangwatch"); err == nil || !strings.Contains(err.Error(), "bound to no node") {
		t.Errorf("hangwatch's ServiceAccount with a token bound to no pod: %v; want the policy's denial", err)
	}
	if err := patchNamedCondition(ctx, statusWriter(ctx, t, cp), a, "KubeletUnresponsive", "hangwatch"); err == nil ||
		!strings.Contains(err.Error(), "may not change KubeletUnresponsive") {
		t.Errorf("another writer of nodes/status: %v; want the policy's denial", err)
	}
	if err := hangwatch.WriteCondition(ctx, harness.ClientFor(t, kcA), a, "RuntimeHung", "hangwatch", corev1.ConditionFalse, time.Now(), time.Now()); err != nil {
		t.Errorf("the node's own identity (the static pod's) setting RuntimeHung False: %v", err)
	}

	// node-problem-detector's own identity, named in kernelDeadlockWriters
	npd := harness.ServiceAccountUser("default", "npd")
	policy := strings.Replace(string(readFile(t, filepath.Join(harness.ModuleRoot(), "manifests", "base", "condition-writers.yaml"))),
		"  - name: kernelDeadlockWriters\n    expression: \"[]\"", "  - name: kernelDeadlockWriters\n    expression: \"['"+npd+"']\"", 1)
	if !strings.Contains(policy, npd) {
		t.Fatal("no kernelDeadlockWriters variable to fill in manifests/base/condition-writers.yaml")
	}
	path := filepath.Join(t.TempDir(), "condition-writers.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	cp.Kubectl(t, "apply", "-f", path)
	mayPatchNodeStatus(ctx, t, cp, "default", "npd")
	npdA := cp.TokenClient(t, cp.NodeBoundToken(t, "default", "npd", a))
	_, _ = harness.Poll(ctx, time.Minute, "the policy to admit the kernelDeadlockWriter on its node", func() bool {
		err = patchNamedCondition(ctx, npdA, a, "KernelDeadlock", "node-problem-detector")
		return err == nil
	}, harness.Every(200*time.Millisecond))
	if err != nil {
		t.Fatalf("the kernelDeadlockWriter writing KernelDeadlock on its token's node: %v", err)
	}
	for what, c := range map[string]struct{ node, cond string }{
		"KernelDeadlock on another node": {b, "KernelDeadlock"},
		"RuntimeHung on its node":        {a, "RuntimeHung"},
	} {
		if err := patchNamedCondition(ctx, npdA, c.node, c.cond, "node-problem-detector"); err == nil || !strings.Contains(err.Error(), "may not change "+c.cond) {
			t.Errorf("the kernelDeadlockWriter writing %s: %v; want the policy's denial", what, err)
		} else {
			t.Logf("the kernelDeadlockWriter writing %s: %v", what, err)
		}
	}
	// a change (KernelDeadlock is True on a now), with a token bound to no pod
	npdUnbound := cp.TokenClient(t, cp.Token(t, "default", "npd", nil))
	if err := hangwatch.WriteCondition(ctx, npdUnbound, a, "KernelDeadlock", "node-problem-detector", corev1.ConditionFalse, time.Now(), time.Now()); err == nil ||
		!strings.Contains(err.Error(), "bound to no node") {
		t.Errorf("the kernelDeadlockWriter with a token bound to no pod: %v; want the policy's denial", err)
	}
}

// mayPatchNodeStatus creates ServiceAccount ns/name (if need be) and lets
// it patch every Node's status, as node-problem-detector's role does.
func mayPatchNodeStatus(ctx context.Context, t *testing.T, cp *harness.ControlPlane, ns, name string) {
	t.Helper()
	_, err := cp.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := "test:" + ns + ":" + name + ":node-status"
	rbac := cp.Admin.RbacV1()
	_, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}}}}, metav1.CreateOptions{})
	if err == nil {
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	cp.WaitAuthorized(t, harness.ServiceAccountUser(ns, name), authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes", Subresource: "status"}})
}

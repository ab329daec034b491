package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestOnlyHangwatchWritesItsConditions applies the base's condition-writers
// policy for real: an identity that may patch every Node's status (as
// node-problem-detector's or a CNI agent's may) is refused a change to
// RuntimeHung, however it names its field manager, and keeps writing its
// own conditions; the node's own identity, as hangwatch's static pod
// writes, may.
func TestOnlyHangwatchWritesItsConditions(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies)
	cp := harness.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "base"))
	node := harness.UniqueNode("writers")
	kc := harness.CreateNode(t, cp, node)
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
	name := harness.UniqueNode("status-writer")
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

package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// faultIdentity is a user whose rights the test takes away and gives back:
// it reads its Node and Lease, patches the Node's status and records Events.
type faultIdentity struct {
	cp         *harness.ControlPlane
	user, node string
	kubeconfig string
	client     kubernetes.Interface
}

func newFaultIdentity(t *testing.T, cp *harness.ControlPlane, node string) *faultIdentity {
	t.Helper()
	f := &faultIdentity{cp: cp, user: "hw-faults-" + node, node: node}
	kc, err := cp.Kubeconfig(f.user, f.user)
	if err != nil {
		t.Fatal(err)
	}
	f.kubeconfig, f.client = kc, harness.ClientFor(t, kc)
	f.grant(t, true, true)
	ctx := context.Background()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: f.user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: f.user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: f.user}}}
	if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(ctx, f.user, metav1.DeleteOptions{})
		_ = cp.Admin.RbacV1().ClusterRoles().Delete(ctx, f.user, metav1.DeleteOptions{})
	})
	admitOtherConditionWriters(t, f)
	return f
}

// grant sets the identity's ClusterRole: the Lease read and the status
// patch each given or taken away.
func (f *faultIdentity) grant(t *testing.T, lease, patch bool) {
	t.Helper()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}
	if lease {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}})
	}
	if patch {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}})
	}
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.user}, Rules: rules}
	_, err := f.cp.Admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = f.cp.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// probePatch sends a dry-run status patch as the identity: admission and
// authorization answer it as they would hangwatch's, and nothing is kept.
func (f *faultIdentity) probePatch() error {
	body := `{"status":{"conditions":[{"type":"RuntimeHung","status":"False","reason":"Probe"}]}}`
	_, err := f.client.CoreV1().Nodes().Patch(context.Background(), f.node, types.StrategicMergePatchType, []byte(body),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
	return err
}

func (f *faultIdentity) leaseReadable() bool {
	_, err := f.client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), f.node, metav1.GetOptions{})
	return err == nil
}

// refuseAsInvalid makes a ValidatingAdmissionPolicy refuse the identity's
// status patches with 422 Invalid; the returned func removes it.
func (f *faultIdentity) refuseAsInvalid(t *testing.T) (remove func()) {
	t.Helper()
	ctx := context.Background()
	name := "hw-refuse-" + f.node
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes/status"}}}}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "the-test-identity", Expression: `request.userInfo.username == "` + f.user + `"`}},
			Validations: []admissionv1.Validation{{Expression: "false", Reason: ptr.To(metav1.StatusReasonInvalid),
				Message: "the test refuses this identity's status patches"}},
		}}
	if _, err := f.cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	if _, err := f.cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove = func() {
		_ = f.cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = f.cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	return remove
}

// TestStatusPatchRefusalsAndLeaseReadErrors takes rights away from a real
// identity on the real API server: a Lease it cannot read makes
// KubeletUnresponsive Unknown (LeaseUnreadable), not True; a status patch
// refused with 403 (RBAC) or 422 (an admission policy) is logged once,
// counted and retried slowly, not in a hot loop, and written soon after the
// cause is fixed.
func TestStatusPatchRefusalsAndLeaseReadErrors(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c, cp := hangwatch.OwnContainerd(t), harness.StartControlPlaneT(t) // its own: no other test's admission policy refuses its identity
	node := hangwatch.UniqueNode("hw-faults")
	nodeKC := hangwatch.CreateNode(t, cp, node)
	stop := make(chan struct{})
	defer close(stop)
	hangwatch.RenewLease(t, harness.ClientFor(t, nodeKC), node, 2*time.Second, stop)
	f := newFaultIdentity(t, cp, node)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(f.kubeconfig, node, "--lease-period", "1s", "--period", "1s", "-t", "1s", noKubeletProbe)...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))

	// The Lease read refused (403): Unknown, then False after good reads.
	f.grant(t, false, true)
	harness.Eventually(t, 30*time.Second, "the Lease read refused", func() bool { return !f.leaseReadable() }, harness.UnlessExited(d))
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionUnknown, "LeaseUnreadable"))
	f.grant(t, true, true)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))

	// The status patch refused by RBAC (403), then by admission (422),
	// each with the Lease read refused too, so KubeletUnresponsive changes
	// and hangwatch writes; the patch right comes back first, so the
	// Unknown reaches the Node before the read works again.
	f.checkRefusal(t, d, "403", func() func() {
		f.grant(t, false, false)
		harness.Eventually(t, 30*time.Second, "the patch refused by RBAC", func() bool { return apierrors.IsForbidden(f.probePatch()) }, harness.UnlessExited(d))
		return func() { f.grant(t, false, true) }
	})
	f.checkRefusal(t, d, "422", func() func() {
		// The policy first, and the Lease read taken away only once the
		// policy is enforced: a fresh policy takes effect a moment after it
		// is created, and hangwatch's one write of the Unknown must meet it.
		remove := f.refuseAsInvalid(t)
		harness.Eventually(t, 30*time.Second, "the patch refused by the policy", func() bool { return apierrors.IsInvalid(f.probePatch()) }, harness.UnlessExited(d))
		f.grant(t, false, true)
		return remove
	})
	logText, _ := os.ReadFile(d.LogPath)
	if n := strings.Count(string(logText), "The API server refused the Node's conditions; retrying slowly"); n != 2 {
		t.Errorf("the refusals were logged %d times, want once for each answer (403, 422)", n)
	}
}

// checkRefusal makes the next status write fail with code, checks it is
// counted and not retried in a hot loop, then gives the patch right back
// and waits for the write to land, and for the Lease read to clear it.
func (f *faultIdentity) checkRefusal(t *testing.T, d *hangwatch.Daemon, code string, refuse func() (restorePatch func())) {
	t.Helper()
	series := `hangwatch_node_status_patch_refusals_total{code="` + code + `"}`
	restorePatch := refuse()
	var first float64
	harness.Eventually(t, 60*time.Second, "a refusal counted with code "+code, func() bool {
		text, err := d.Get("/metrics")
		first = harness.MetricValue(text, series)
		return err == nil && first >= 1
	}, harness.UnlessExited(d))
	refusedAt := time.Now()
	// Watch for 10 s: a hot loop would send hundreds; the slow retry (every
	// 15-30 s) sends at most one more.
	harness.Eventually(t, 15*time.Second, "10 s of refusals", func() bool { return time.Since(refusedAt) >= 10*time.Second }, harness.UnlessExited(d))
	text, _ := d.Get("/metrics")
	if n := harness.MetricValue(text, series); n > first+1 {
		t.Errorf("%v refusals with code %s in 10 s after the first; want at most one slow retry", n-first, code)
	}
	restorePatch()
	fixed := time.Now()
	hangwatch.WaitNode(t, f.cp, d, 60*time.Second, f.node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionUnknown, "LeaseUnreadable"))
	harness.Measure(t, "refused_"+code+"_written_after_the_fix", time.Since(fixed))
	f.grant(t, true, true)
	hangwatch.WaitNode(t, f.cp, d, 30*time.Second, f.node, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))
}

// admitOtherConditionWriters takes away the base's condition-writers policy
// where an earlier test applied it to the shared API server: these tests
// run hangwatch as an identity of their own, to fault its rights, and the
// policy admits only hangwatch's. It waits until the identity's status
// patch (a dry run) is admitted.
func admitOtherConditionWriters(t *testing.T, f *faultIdentity) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := f.cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "hangwatch.io-condition-writers", metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var last error
	if _, err := harness.Poll(ctx, time.Minute, "the condition-writers policy to be gone", func() bool {
		last = f.probePatch()
		return last == nil
	}, harness.Every(200*time.Millisecond)); err != nil {
		t.Fatalf("%v; the last patch: %v", err, last)
	}
}

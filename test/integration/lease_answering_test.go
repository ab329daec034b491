package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestALeaseRefusedWhileTheKubeletAnswersIsUnknown runs a real kubelet
// whose Lease renewals an admission policy refuses: the kubelet answers
// on the node, its writes do not land. hangwatch, scraping the kubelet's
// metrics as the static pod does, sees its PUTs fail and reads the Lease
// at once rather than at the next idle read: KubeletUnresponsive Unknown
// with the Lease-based reason, and repair (enabled) restarts nothing, past
// its first minute and the kubelet's restart delay.
func TestALeaseRefusedWhileTheKubeletAnswersIsUnknown(t *testing.T) {
	harness.Parallel(t)
	n := hangwatch.StartKubeletNode(t)
	kc, err := n.CP.NodeKubeconfig(n.K.Node)
	if err != nil {
		t.Fatal(err)
	}
	allowKubeletMetrics(t, n.CP, n.K.Node)
	config := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"+
		"kubelet:\n  healthzURL: %s\n  metricsURL: %s\n  kubeconfig: %s\n  caFile: %s\n"+
		"repair:\n  enabled: true\n  systemdSocket: %s\n",
		n.K.HealthzURL(), n.K.MetricsURL(), kc, n.K.ServingCert, filepath.Join(t.TempDir(), "no-systemd"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	d := hangwatch.StartRepairing(t, n.C.Where().Endpoint, hangwatch.NodeArgs(kc, n.K.Node, "--config", config)...)
	started := time.Now()
	harness.Eventually(t, time.Minute, "KubeletUnresponsive False", func() bool { st, _, _ := d.Condition(t, "KubeletUnresponsive"); return st == "False" })

	refuseLeaseRenewals(t, n.CP, n.K.Node)
	refused := time.Now()
	harness.Eventually(t, 2*time.Minute, "KubeletUnresponsive Unknown (NodeLeaseNotRenewed)", func() bool {
		st, reason, _ := d.Condition(t, "KubeletUnresponsive")
		return st == "Unknown" && reason == "NodeLeaseNotRenewed"
	})
	harness.Measure(t, "lease_refused_unknown_after_refusal", time.Since(refused))
	if log, err := os.ReadFile(d.LogPath); err != nil || !strings.Contains(string(log), "The kubelet's PUTs to the API server are failing") {
		t.Errorf("seen without the kubelet's metrics' nudge (the idle read is 5 min away): %v", err)
	}
	pid := n.K.PID()
	harness.Eventually(t, 2*time.Minute, "the kubelet's restart wait and delay to pass, twice", func() bool {
		return time.Since(started) > 4*repair.DefaultRestartKubeletAfter
	})
	st, reason, msg := d.Condition(t, "KubeletUnresponsive")
	if st != "Unknown" || reason != "NodeLeaseNotRenewed" || !strings.Contains(msg, "the kubelet answers on the node") {
		t.Errorf("KubeletUnresponsive %s %s %q, want Unknown NodeLeaseNotRenewed saying the kubelet answers", st, reason, msg)
	}
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "hangwatch_repairs_total{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("repair acted on a kubelet that answers: %s", line)
		}
	}
	if n.K.PID() != pid {
		t.Errorf("the kubelet's process changed: %d, then %d", pid, n.K.PID())
	}
}

// refuseLeaseRenewals makes a ValidatingAdmissionPolicy refuse the node
// identity's updates of its Lease, until the test ends.
func refuseLeaseRenewals(t *testing.T, cp *harness.ControlPlane, node string) {
	t.Helper()
	ctx := context.Background()
	name := "hw-refuse-lease-" + node
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"leases"}}}}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "the-node", Expression: `request.userInfo.username == "system:node:` + node + `"`}},
			Validations:     []admissionv1.Validation{{Expression: "false", Message: "the test refuses this node's Lease renewals"}},
		}}
	if _, err := cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	if _, err := cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// allowKubeletMetrics lets the node identity get its kubelet's /metrics,
// as manifests/overlays/static-pod does for every node.
func allowKubeletMetrics(t *testing.T, cp *harness.ControlPlane, node string) {
	t.Helper()
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "base"))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hw-kubelet-metrics-" + node},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "hangwatch:kubelet-metrics"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:node:" + node}}}
	if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
}

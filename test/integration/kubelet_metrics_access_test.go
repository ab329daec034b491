package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// kubeletNode is a real kubelet on its own containerd, registered with the
// shared control plane.
type kubeletNode struct {
	cp *harness.ControlPlane
	c  *harness.Containerd
	k  *harness.Kubelet
}

func startKubeletNode(t *testing.T) kubeletNode {
	t.Helper()
	cp := controlPlane(t)
	c := harness.StartContainerdT(t, 0, 0)
	start := time.Now()
	k := harness.StartKubeletT(t, cp, c, uniqueNode("kubelet"))
	t.Logf("kubelet %s Ready in %v", k.Node, time.Since(start).Round(time.Millisecond))
	return kubeletNode{cp: cp, c: c, k: k}
}

// metricsToken creates a ServiceAccount and returns a file holding a token
// for it; with allow it is bound to a ClusterRole granting get on
// nodes/metrics, as the DaemonSet's is.
func metricsToken(t *testing.T, cp *harness.ControlPlane, name string, allow bool) string {
	t.Helper()
	ctx := context.Background()
	sa, err := cp.Admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if allow {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}}}}
		if _, err := cp.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}
		if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAuthorized(t, cp, serviceAccountUser("default", name), authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "metrics"}})
	}
	tr, err := cp.Admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".token")
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubeletMetricsAccess(t *testing.T) {
	n := startKubeletNode(t)
	allowed := metricsToken(t, n.cp, "hw-metrics-"+n.k.Node, true)
	denied := metricsToken(t, n.cp, "hw-nometrics-"+n.k.Node, false)
	bad := filepath.Join(t.TempDir(), "bad.token")
	if err := os.WriteFile(bad, []byte("not-a-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The kubelet's self-signed serving certificate names the node, not
	// 127.0.0.1: verify it against the node name.
	monitorCert, err := n.cp.Kubeconfig("hw-monitor-"+n.k.Node, "hangwatch-monitor", "system:monitoring")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-ca-file", n.k.ServingCert, "--kubelet-tls-server-name", n.k.Node}
	cases := []struct {
		name  string
		args  []string
		state string // of the scrape signal
		want  string // in its detail
	}{
		{"token with nodes/metrics", append(base, "--kubelet-token-file", allowed), "ok", "answered"},
		{"certificate in group system:monitoring (static pod)", append(base, "--kubelet-kubeconfig", monitorCert), "ok", "answered"},
		{"token without nodes/metrics", append(base, "--kubelet-token-file", denied), "problem", "403"},
		{"bad token", append(base, "--kubelet-token-file", bad), "problem", "401"},
		{"CA, the node's name as server name (the shipped configs)", []string{"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-ca-file", n.k.ServingCert, "--node-name", n.k.Node, "--kubelet-token-file", allowed}, "ok", "answered"},
		{"CA, another node's name", []string{"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-ca-file", n.k.ServingCert, "--node-name", "not-" + n.k.Node, "--kubelet-token-file", allowed}, "problem", "--kubelet-tls-server-name"},
		{"a CA that did not sign it", []string{"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-ca-file", n.cp.PKI.CAFile, "--node-name", n.k.Node, "--kubelet-token-file", allowed}, "problem", "did not verify"},
		{"skip verify on loopback", []string{"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-insecure-skip-tls-verify", "--kubelet-token-file", allowed}, "ok", "answered"},
		{"read-only port", []string{"--kubelet-metrics-url", n.k.ReadOnlyMetricsURL()}, "ok", "answered"},
	}
	for _, c := range cases {
		r, _, elapsed := runDiag(t, n.c.Endpoint, c.args...)
		sig := r.PLEG.signal("scrape")
		t.Logf("%s: verdict %s, scrape %s: %s (%v)", c.name, r.PLEG.Verdict, sig.State, sig.Detail, elapsed.Round(time.Millisecond))
		if sig.State != c.state || !contains(sig.Detail, c.want) {
			t.Errorf("%s: scrape signal %+v, want %s with %q", c.name, sig, c.state, c.want)
		}
		if r.PLEG.EmulatedRelistSeconds == nil || r.PLEG.signal("emulation").State != "ok" {
			t.Errorf("%s: the emulation did not run: %+v", c.name, r.PLEG)
		}
	}
}

package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// kubeletNode is a real kubelet on its own containerd, registered with the
// shared control plane.
type kubeletNode struct {
	cp *harness.ControlPlane
	c  harness.NodeRuntime
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

// getNodesMetrics is the right to the kubelet's metrics the DaemonSet's
// ClusterRole grants.
var getNodesMetrics = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}}

func TestKubeletMetricsAccess(t *testing.T) {
	harness.Parallel(t)
	n := startKubeletNode(t)
	allowed := harness.TokenFile(t, n.cp.ServiceAccountToken(t, "hw-metrics-"+n.k.Node, getNodesMetrics))
	denied := harness.TokenFile(t, n.cp.ServiceAccountToken(t, "hw-nometrics-"+n.k.Node))
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
		r, _, elapsed := runDiag(t, n.c.Where().Endpoint, c.args...)
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

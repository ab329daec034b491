package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

func TestKubeletMetricsAccess(t *testing.T) {
	harness.Parallel(t)
	n := hangwatch.StartKubeletNode(t)
	allowed := harness.TokenFile(t, n.CP.ServiceAccountToken(t, "hw-metrics-"+n.K.Node, hangwatch.GetNodesMetrics))
	denied := harness.TokenFile(t, n.CP.ServiceAccountToken(t, "hw-nometrics-"+n.K.Node))
	bad := filepath.Join(t.TempDir(), "bad.token")
	if err := os.WriteFile(bad, []byte("not-a-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The kubelet's self-signed serving certificate names the node, not
	// 127.0.0.1: verify it against the node name.
	monitorCert, err := n.CP.Kubeconfig("hw-monitor-"+n.K.Node, "hangwatch-monitor", "system:monitoring")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.K.ServingCert, "--kubelet-tls-server-name", n.K.Node}
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
		{"CA, the node's name as server name (the shipped configs)", []string{"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.K.ServingCert, "--node-name", n.K.Node, "--kubelet-token-file", allowed}, "ok", "answered"},
		{"CA, another node's name", []string{"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.K.ServingCert, "--node-name", "not-" + n.K.Node, "--kubelet-token-file", allowed}, "problem", "--kubelet-tls-server-name"},
		{"a CA that did not sign it", []string{"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.CP.PKI.CAFile, "--node-name", n.K.Node, "--kubelet-token-file", allowed}, "problem", "did not verify"},
		{"skip verify on loopback", []string{"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-insecure-skip-tls-verify", "--kubelet-token-file", allowed}, "ok", "answered"},
		{"read-only port", []string{"--kubelet-metrics-url", n.K.ReadOnlyMetricsURL()}, "ok", "answered"},
	}
	for _, c := range cases {
		r, _, elapsed := runDiag(t, n.C.Where().Endpoint, c.args...)
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

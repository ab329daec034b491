package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestSecurePortServesTheChartsCertificate runs hangwatch as the DaemonSet
// runs it: as its ServiceAccount (the overlay applied for real, so the
// TokenReviews and SubjectAccessReviews go through its
// system:auth-delegator binding), on the serving certificate the Helm
// chart generates. It scrapes the secure port as the chart's PodMonitor
// does: the scraper's token, and TLS verified with the Secret's ca.crt
// against the PodMonitor's serverName. A client that asks for another name
// is refused by its own TLS check.
func TestSecurePortServesTheChartsCertificate(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneAdmissionPolicies) // it applies the daemonset overlay, as the admission tests do
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "daemonset"))
	node := hangwatch.UniqueNode("hw-secure-ca")
	hangwatch.CreateNode(t, cp, node)
	kc := cp.TokenKubeconfig(t, cp.Token(t, "kube-system", "hangwatch", hangwatchPodOn(ctx, t, cp, node)))
	cert := chartServingCert(t)
	secure := harness.FreeAddr(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--secure-listen-address", secure,
		"--tls-cert-file", cert.certFile, "--tls-private-key-file", cert.keyFile)...)
	scraper := hangwatch.ApplyScraperIdentity(t, cp)
	url := "https://" + secure + "/metrics"

	code, body, err := verifiedGet(url, scraper, cert.ca, cert.serverName)
	if err != nil {
		t.Fatalf("GET %s verified against the chart's CA as %s: %v", url, cert.serverName, err)
	}
	t.Logf("GET /metrics as the PodMonitor, TLS verified as %s: %d", cert.serverName, code)
	if code != http.StatusOK || !strings.Contains(body, "hangwatch_node_condition") {
		t.Errorf("GET /metrics as the PodMonitor: %d, want 200 with hangwatch's metrics:\n%s", code, harness.FirstLine(body))
	}
	if _, _, err := verifiedGet(url, scraper, cert.ca, "hangwatch.elsewhere.svc"); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client asking for another name was not refused by the certificate check: %v", err)
	}
	harness.Eventually(t, 30*time.Second, "RuntimeHung written as the ServiceAccount", func() bool {
		return hangwatch.NodeCond(t, cp, node, "RuntimeHung") != nil
	}, harness.UnlessExited(d))
	d.Stop(t)
}

type servingCert struct {
	certFile, keyFile, serverName string
	ca                            []byte
}

// chartServingCert renders the chart's Secret and PodMonitor and writes the
// Secret's certificate and key to files, as the pod's mount would hold them.
func chartServingCert(t *testing.T) servingCert {
	t.Helper()
	out, err := harness.HelmTemplate("hangwatch", append(harness.HelmMonitorsOn,
		"--show-only", "templates/serving-cert.yaml", "--show-only", "templates/podmonitor.yaml")...)
	if err != nil {
		t.Fatal(err)
	}
	var sc servingCert
	dir := t.TempDir()
	for _, doc := range strings.Split(string(out), "\n---") {
		var o struct {
			Kind string
			Data map[string]string
			Spec struct {
				PodMetricsEndpoints []struct {
					TLSConfig struct{ ServerName string } `json:"tlsConfig"`
				} `json:"podMetricsEndpoints"`
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "Secret":
			sc.certFile = writeB64(t, dir, "tls.crt", o.Data["tls.crt"])
			sc.keyFile = writeB64(t, dir, "tls.key", o.Data["tls.key"])
			sc.ca = readFile(t, writeB64(t, dir, "ca.crt", o.Data["ca.crt"]))
		case "PodMonitor":
			sc.serverName = o.Spec.PodMetricsEndpoints[0].TLSConfig.ServerName
		}
	}
	if sc.certFile == "" || sc.serverName == "" {
		t.Fatalf("the chart rendered no serving Secret or no PodMonitor serverName:\n%s", out)
	}
	return sc
}

func writeB64(t *testing.T, dir, name, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verifiedGet asks url with a bearer token over TLS verified against caPEM
// for serverName, as Prometheus does with a PodMonitor's ca and serverName.
func verifiedGet(url, token string, caPEM []byte, serverName string) (int, string, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	return harness.Get(url, harness.Token(token), harness.Client(&http.Client{Transport: tr}))
}

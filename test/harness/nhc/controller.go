package nhc

import (
	"crypto/tls"
	"github.com/hangwatch/hangwatch/test/harness"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// startNHCController runs the controller as its ServiceAccount (a client
// certificate of that user name and its groups, which RBAC's
// ServiceAccount subjects match), outside a cluster: no leader election
// (controller-runtime finds no namespace for its Lease outside a pod),
// metrics and probes on free loopback ports, its webhook on :9443 with a
// certificate of the test's CA in $TMPDIR/k8s-webhook-server/serving-certs
// (controller-runtime's default), DEPLOYMENT_NAMESPACE set. It waits for
// /readyz and the webhook's TLS handshake.
func startNHCController(t *testing.T, cp *harness.ControlPlane, nhc Operator) *harness.Proc {
	t.Helper()
	if ln, err := net.Listen("tcp", ":"+strconv.Itoa(NHCWebhookPort)); err != nil {
		t.Fatalf("the controller serves its webhook on :%d, which is taken: %v", NHCWebhookPort, err)
	} else {
		_ = ln.Close()
	}
	kc, err := cp.Kubeconfig("nhc", harness.ServiceAccountUser(Namespace, NHCServiceAccount),
		"system:serviceaccounts", "system:serviceaccounts:"+Namespace)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := writeWebhookServingCert(cp, filepath.Join(tmp, "k8s-webhook-server", "serving-certs")); err != nil {
		t.Fatal(err)
	}
	probe := harness.FreeAddr(t)
	p := harness.StartProc(t, "node-healthcheck-operator", harness.ProcOptions{
		Grace: 10 * time.Second, DieWithTest: true,
		Env: []string{"KUBECONFIG=" + kc, "DEPLOYMENT_NAMESPACE=" + Namespace, "TMPDIR=" + tmp, "HOME=" + tmp},
	}, nhc.Bin, "--leader-elect=false", "--metrics-bind-address="+harness.FreeAddr(t), "--health-probe-bind-address="+probe)
	harness.Eventually(t, 60*time.Second, "the NodeHealthCheck controller's /readyz", func() bool {
		code, _, err := harness.Get("http://" + probe + "/readyz")
		return err == nil && code == http.StatusOK
	}, harness.UnlessExited(p))
	waitNHCWebhookTLS(t, cp, p)
	return p
}

// writeWebhookServingCert writes a serving certificate of the test's CA
// for the loopback addresses into certDir as tls.crt and tls.key.
func writeWebhookServingCert(cp *harness.ControlPlane, certDir string) error {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	cert, key, err := cp.PKI.Serving("nhc-webhook")
	if err != nil {
		return err
	}
	for from, to := range map[string]string{cert: "tls.crt", key: "tls.key"} {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certDir, to), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// waitNHCWebhookTLS waits until the controller's webhook completes a TLS
// handshake with a certificate the test's CA signed for 127.0.0.1.
func waitNHCWebhookTLS(t *testing.T, cp *harness.ControlPlane, p *harness.Proc) {
	t.Helper()
	pool, err := cp.PKI.CertPool()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(NHCWebhookPort))
	harness.Eventually(t, 30*time.Second, "the NodeHealthCheck webhook's TLS handshake", func() bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}, harness.UnlessExited(p))
}

package manifests

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestHelmChartGeneratesAServingCertificate renders the chart with its
// defaults: it makes a CA and a serving certificate in a Secret, hangwatch
// serves that certificate on the secure port, and the PodMonitor verifies
// it with the CA against the name the certificate holds, with no
// insecureSkipVerify. Turned off, the PodMonitor skips verification of
// each pod's self-signed certificate, as before.
func TestHelmChartGeneratesAServingCertificate(t *testing.T) {
	objs := renderHelmChart(t, "hangwatch", harness.HelmMonitorsOn...)
	sec := objs["Secret/hangwatch-serving-cert"]
	if sec == nil {
		t.Fatal("the chart renders no Secret/hangwatch-serving-cert")
	}
	if sec["type"] != "kubernetes.io/tls" {
		t.Errorf("Secret type %v, want kubernetes.io/tls", sec["type"])
	}
	data := func(key string) []byte {
		b, err := base64.StdEncoding.DecodeString(dig(sec, "data", key).(string))
		if err != nil {
			t.Fatalf("Secret data %s: %v", key, err)
		}
		return b
	}
	tlsConfig := podMonitorTLS(t, objs["PodMonitor/hangwatch"])
	serverName, _ := tlsConfig["serverName"].(string)
	if serverName != "hangwatch.kube-system.svc" {
		t.Errorf("PodMonitor serverName %q, want hangwatch.kube-system.svc", serverName)
	}
	if tlsConfig["insecureSkipVerify"] != nil {
		t.Errorf("PodMonitor still skips verification: %v", tlsConfig)
	}
	if got := dig(tlsConfig, "ca", "secret", "name"); got != "hangwatch-serving-cert" {
		t.Errorf("PodMonitor CA from %v, want Secret hangwatch-serving-cert", got)
	}
	if err := verifyServing(data("tls.crt"), data("tls.key"), data("ca.crt"), serverName); err != nil {
		t.Error(err)
	}
	var config map[string]any
	mustUnmarshal(t, []byte(dig(objs["ConfigMap/hangwatch-config"], "data", "config.yaml").(string)), &config)
	if got := dig(config, "server", "tlsCertFile"); got != "/etc/hangwatch-tls/tls.crt" {
		t.Errorf("config server.tlsCertFile %v, want the mounted Secret's", got)
	}
	mounted := false
	for _, v := range dig(objs["DaemonSet/hangwatch"], "spec", "template", "spec", "volumes").([]any) {
		mounted = mounted || dig(v, "secret", "secretName") == "hangwatch-serving-cert"
	}
	if !mounted {
		t.Error("the DaemonSet does not mount Secret hangwatch-serving-cert")
	}

	off := renderHelmChart(t, "hangwatch", append(harness.HelmMonitorsOn, "--set", "secureServing.generateCert=false")...)
	if off["Secret/hangwatch-serving-cert"] != nil {
		t.Error("generateCert=false still renders the Secret")
	}
	if got := podMonitorTLS(t, off["PodMonitor/hangwatch"])["insecureSkipVerify"]; got != true {
		t.Errorf("with no certificate to verify, the PodMonitor's insecureSkipVerify is %v, want true", got)
	}
}

func podMonitorTLS(t *testing.T, pm map[string]any) map[string]any {
	t.Helper()
	eps, _ := dig(pm, "spec", "podMetricsEndpoints").([]any)
	if len(eps) != 1 {
		t.Fatalf("PodMonitor endpoints: %v", eps)
	}
	c, _ := dig(eps[0], "tlsConfig").(map[string]any)
	return c
}

// verifyServing checks that certPEM and keyPEM are a pair and that the
// certificate is valid for serverName under caPEM, as Prometheus checks it.
func verifyServing(certPEM, keyPEM, caPEM []byte, serverName string) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return errors.New("ca.crt holds no certificate")
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: serverName, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

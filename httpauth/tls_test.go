package httpauth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestSelfSignedNamesItsHosts(t *testing.T) {
	now := time.Unix(1e9, 0)
	cert, err := SelfSigned([]string{"node-1", "127.0.0.1", "::1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"node-1", "127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if !leaf.NotAfter.After(now.Add(300 * 24 * time.Hour)) {
		t.Errorf("valid until %v only", leaf.NotAfter)
	}
}

// writePair writes a self-signed pair for host into dir.
func writePair(t *testing.T, dir, host string) (string, string) {
	t.Helper()
	cert, err := SelfSigned([]string{host}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: cert.Certificate[0]}, keyFile: {Type: "PRIVATE KEY", Bytes: key}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

func servedName(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.DNSNames[0]
}

func TestServingConfigReloadsRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, "first")
	clk := testclock.NewFakePassiveClock(time.Now())
	cfg, err := ServingConfig(certFile, keyFile, nil, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got := servedName(t, cfg); got != "first" {
		t.Fatalf("serves %q", got)
	}
	writePair(t, dir, "second")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(certFile, later, later); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(reloadEvery))
	if got := servedName(t, cfg); got != "second" {
		t.Errorf("after rotation serves %q, want second", got)
	}
}

func TestServingConfigWantsBothFiles(t *testing.T) {
	if _, err := ServingConfig("cert.pem", "", nil, testclock.NewFakePassiveClock(time.Now())); err == nil {
		t.Error("a cert without its key was accepted")
	}
}

package httpauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// reloadEvery is how often a certificate from files is checked for a
// newer one (cert-manager and kubeadm rotate them in place).
const reloadEvery = time.Minute

// ServingConfig returns the TLS configuration of the secure port: the
// certificate and key from files when both are given (re-read when they
// change), else a self-signed certificate for hosts, made in memory, as
// the kubelet does without --tls-cert-file.
func ServingConfig(certFile, keyFile string, hosts []string, clk clock.PassiveClock) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case certFile == "" && keyFile == "":
		cert, err := SelfSigned(hosts, clk.Now())
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	case certFile == "" || keyFile == "":
		return nil, fmt.Errorf("--tls-cert-file %q and --tls-private-key-file %q: give both or neither", certFile, keyFile)
	default:
		r := &certReloader{certFile: certFile, keyFile: keyFile, clk: clk}
		if err := r.load(); err != nil {
			return nil, err
		}
		cfg.GetCertificate = r.get
	}
	return cfg, nil
}

// SelfSigned makes an ECDSA P-256 certificate for hosts (names and IP
// addresses), valid for a year from now.
func SelfSigned(hosts []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: fmt.Sprintf("hangwatch@%d", now.Unix())},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// certReloader serves a certificate from files, reading them again at
// most once a minute when their modification time moved.
type certReloader struct {
	certFile, keyFile string
	clk               clock.PassiveClock
	mu                sync.Mutex
	cert              *tls.Certificate
	modTime           time.Time
	checked           time.Time
}

func (r *certReloader) load() error {
	st, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s: %w", r.certFile, err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s and --tls-private-key-file %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.modTime = &cert, st.ModTime()
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.clk.Now(); now.Sub(r.checked) >= reloadEvery {
		r.checked = now
		if st, err := os.Stat(r.certFile); err == nil && !st.ModTime().Equal(r.modTime) {
			// A half-written pair fails to load: keep serving the old one.
			if err := r.load(); err != nil {
				klog.ErrorS(err, "Serving certificate not reloaded; the old one is served")
			}
		}
	}
	return r.cert, nil
}

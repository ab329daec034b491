package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// waitHTTP polls url until it answers 200, the process exits or ctx ends
// (at most two minutes).
func waitHTTP(ctx context.Context, p *Process, client *http.Client, url string) error {
	return WaitHTTPUntil(ctx, p.name, p.Alive, client, url)
}

// WaitHTTPUntil polls url until it answers 200, alive says name has exited
// or ctx ends (at most two minutes).
func WaitHTTPUntil(ctx context.Context, name string, alive func() bool, client *http.Client, url string) error {
	last, gone := "", false
	_, err := Poll(ctx, 2*time.Minute, name+" to answer at "+url, func() bool {
		var ok bool
		ok, last = getOK(ctx, client, url)
		gone = !ok && !alive()
		return ok || gone
	}, Every(100*time.Millisecond), Explaining(func() string { return "last answer: " + last }))
	if gone {
		return fmt.Errorf("%s exited before %s answered", name, url)
	}
	return err
}

// getOK asks url once: whether it answered 200, and else what it said.
func getOK(ctx context.Context, client *http.Client, url string) (bool, string) {
	code, body, err := Get(url, Client(client), Within(ctx))
	if err != nil {
		return false, err.Error()
	}
	return code == http.StatusOK, fmt.Sprintf("%d %s", code, FirstLine(body))
}

// httpClient is an HTTP client with a client certificate written by
// Kubeconfig(name, ...), trusting the test CA.
func (cp *ControlPlane) httpClient(name string) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, name+".crt"), filepath.Join(cp.Dir, name+".key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(cp.PKI.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}, nil
}

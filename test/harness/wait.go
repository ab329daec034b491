package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// waitHTTP polls url until it answers 200, the process exits or ctx ends
// (at most two minutes).
func waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	return waitHTTPUntil(ctx, p.name, p.alive, client, url)
}

// waitHTTPUntil polls url until it answers 200, alive says name has exited
// or ctx ends (at most two minutes).
func waitHTTPUntil(ctx context.Context, name string, alive func() bool, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		if !alive() {
			return fmt.Errorf("%s exited before %s answered", name, url)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %s", name, url, last)
		case <-tick.C:
		}
	}
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

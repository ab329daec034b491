package harness

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SecureClient keeps its connections, as Prometheus does: hangwatch holds
// at most 32 at once, and a new client per request would leave each one
// open until the server's idle timeout.
var SecureClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // hangwatch's self-signed certificate, as the shipped PodMonitor

// SecureGet asks hangwatch's secure port, whose certificate is
// self-signed, as the PodMonitor does (insecureSkipVerify).
func SecureGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil) //nolint:noctx // bounded by the client's timeout
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := SecureClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func HTTPGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback test request
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

package harness

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The tests' one HTTP getter: Get, and MustGet, which fails the test when
// no answer comes. Options say how to ask: a bearer token, a client of
// the caller's (TLS), a timeout.

// SecureClient asks hangwatch's secure port, whose certificate is
// self-signed, as the shipped PodMonitor does (insecureSkipVerify). It
// keeps its connections, as Prometheus does: hangwatch holds at most 32
// at once, and a new client per request would leave each one open until
// the server's idle timeout.
var SecureClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // hangwatch's self-signed certificate, as the shipped PodMonitor

// A GetOption says how Get asks.
type GetOption func(*getRequest)

type getRequest struct {
	client  *http.Client
	token   string
	timeout time.Duration
	parent  context.Context
}

// Token sends token as the bearer token.
func Token(token string) GetOption { return func(r *getRequest) { r.token = token } }

// Client asks through c (its TLS settings, its connections).
func Client(c *http.Client) GetOption { return func(r *getRequest) { r.client = c } }

// Within ends the request with ctx too.
func Within(ctx context.Context) GetOption { return func(r *getRequest) { r.parent = ctx } }

// Timeout bounds the request (15 s unless told).
func Timeout(d time.Duration) GetOption { return func(r *getRequest) { r.timeout = d } }

// Get asks url with GET and returns the status code and the body, what
// the status; err when no answer (or not all of it) came.
func Get(url string, opts ...GetOption) (code int, body string, err error) {
	r := getRequest{client: http.DefaultClient, timeout: 15 * time.Second, parent: context.Background()}
	for _, o := range opts {
		o(&r)
	}
	ctx, cancel := context.WithTimeout(r.parent, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// MustGet is Get failing t when no answer came.
func MustGet(t testing.TB, url string, opts ...GetOption) (code int, body string) {
	t.Helper()
	code, body, err := Get(url, opts...)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return code, body
}

// FirstLine is s up to its first line break.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

package httpauth

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// startSecure serves "secret" on a SecureServer on a free loopback port,
// with the fake reviewer and the limits lim.
func startSecure(t *testing.T, lim limits) (string, *fakeReviewer) {
	t.Helper()
	attrs, err := ParseResource("", "")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeReviewer()
	s, err := NewSecureServer(ServerOptions{Address: "127.0.0.1:0", Reviewer: f, Attributes: attrs, Hosts: []string{"127.0.0.1"},
		Clock: testclock.NewFakePassiveClock(time.Now()), CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s.limits = lim
	if err := s.Listen(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("secret")) })); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close(); <-done })
	return "https://" + s.Addr(), f
}

// get asks url with token; it returns the status and whether the server
// closes the connection after it.
func get(t *testing.T, client *http.Client, url, token string) (int, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Close
}

func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test server's self-signed certificate
}

func TestSilentConnectionClosedBeforeItsRequest(t *testing.T) {
	lim := defaultLimits
	lim.readHeader = 300 * time.Millisecond
	base, _ := startSecure(t, lim)
	start := time.Now()
	c := dialFrom(t, "127.0.0.1", base[len("https://"):])
	if !closedAtOnce(t, c) {
		t.Fatalf("a connection that sent nothing was still open after 5 s (read header timeout %v)", lim.readHeader)
	}
	t.Logf("a silent connection closed after %v", time.Since(start).Round(time.Millisecond))
}

func TestOnlyCallersLetThroughKeepTheirConnection(t *testing.T) {
	base, _ := startSecure(t, defaultLimits)
	client := clientFrom("127.0.0.1")
	if code, closed := get(t, client, base+"/metrics", "forged"); code != http.StatusUnauthorized || !closed {
		t.Errorf("a forged token: %d, close %v; want 401 and the connection closed", code, closed)
	}
	if code, closed := get(t, client, base+"/metrics", "good"); code != http.StatusOK || closed {
		t.Errorf("the scraper: %d, close %v; want 200 and the connection kept", code, closed)
	}
}

// TestHeldConnectionsDoNotStopAScrape: 64 silent connections from one
// source hold its 8 slots, the rest are closed at once, and a scraper from
// another source is served.
func TestHeldConnectionsDoNotStopAScrape(t *testing.T) {
	base, _ := startSecure(t, defaultLimits)
	addr := base[len("https://"):]
	var held []net.Conn
	for range 64 {
		held = append(held, dialFrom(t, "127.0.0.2", addr))
	}
	start := time.Now()
	if code, _ := get(t, clientFrom("127.0.0.1"), base+"/metrics", "good"); code != http.StatusOK {
		t.Errorf("the scraper beside 64 held connections: %d, want 200", code)
	}
	t.Logf("scrape beside 64 held connections: %v", time.Since(start).Round(time.Millisecond))
	if open := stillOpen(held, time.Second); open != defaultLimits.perSource {
		t.Errorf("%d of 64 silent connections from one source kept, want %d", open, defaultLimits.perSource)
	}
}

// stillOpen counts the connections the server neither closed nor wrote
// to within d, reading them all at once (a read past an expired deadline
// would not see the close).
func stillOpen(conns []net.Conn, d time.Duration) int {
	deadline := time.Now().Add(d)
	results := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			results <- errors.Is(err, os.ErrDeadlineExceeded)
		}()
	}
	open := 0
	for range conns {
		if <-results {
			open++
		}
	}
	return open
}

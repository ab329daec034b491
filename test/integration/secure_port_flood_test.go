package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/httpauth"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// The port's global review budget, as shipped.
var reviewRate, reviewBurst = int(httpauth.DefaultBudget.Rate), httpauth.DefaultBudget.Burst

// TestSecurePortFlood sends 10,000 requests with made-up tokens at the
// secure port from 32 workers, each from its own loopback address (its
// own source), while a scraper on 127.0.0.1 asks /metrics every 200 ms
// with the PodMonitor's token, reviewed before the flood: every scrape
// is answered, and the API server sees no more TokenReviews than the
// port's global budget allows. Then 64 silent connections from one
// address and 64 that sent one 401 request each do not stop a scrape.
func TestSecurePortFlood(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c, cp := hangwatch.SharedContainerd(t), harness.StartControlPlaneT(t) // its own: the test counts requests at the API server
	node := hangwatch.UniqueNode("hw-secure-flood")
	kc := hangwatch.CreateNode(t, cp, node)
	secure := harness.FreeAddr(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--secure-listen-address", secure)...)
	base := "https://" + secure
	scraper := hangwatch.ApplyScraperIdentity(t, cp)
	if code, body := harness.MustGet(t, base+"/metrics", harness.Token(scraper), harness.Client(harness.SecureClient)); code != http.StatusOK {
		t.Fatalf("the scraper before the flood: %d %s", code, harness.FirstLine(body))
	}

	reviewsBefore := scenarios.APIRequests(t, cp, "POST", "tokenreviews", "")
	accessBefore := scenarios.APIRequests(t, cp, "POST", "subjectaccessreviews", "")
	stop := make(chan struct{})
	scrapes := make(chan scrapeLog, 1)
	go func() { scrapes <- scrapePeriodically(base+"/metrics", scraper, 200*time.Millisecond, stop) }()
	start := time.Now()
	f := flood(base+"/metrics", 10_000, 32)
	elapsed := time.Since(start)
	close(stop)
	s := <-scrapes
	reviews := scenarios.APIRequests(t, cp, "POST", "tokenreviews", "") - reviewsBefore
	access := scenarios.APIRequests(t, cp, "POST", "subjectaccessreviews", "") - accessBefore

	harness.Measure(t, "secure_flood_duration", elapsed)
	measurements.Record(t, "secure_flood_requests", float64(f.sent), "requests")
	measurements.Record(t, "secure_flood_requests_per_second", float64(f.sent)/elapsed.Seconds(), "requests/s")
	measurements.Record(t, "secure_flood_answered_401", float64(f.unauthorized), "requests")
	measurements.Record(t, "secure_flood_answered_429", float64(f.throttled), "requests")
	measurements.Record(t, "secure_flood_answered_other", float64(f.other), "requests")
	measurements.Record(t, "secure_flood_errors", float64(f.errors), "requests", fmt.Sprintf("first: %v", f.firstErr))
	bound := reviewBurst + int(float64(reviewRate)*elapsed.Seconds()) + 5
	measurements.Record(t, "secure_flood_tokenreviews", float64(reviews), "requests",
		fmt.Sprintf("budget bound %d: burst %d + %d/s x %.1fs + 5", bound, reviewBurst, reviewRate, elapsed.Seconds()))
	measurements.Record(t, "secure_flood_subjectaccessreviews", float64(access), "requests")
	measurements.Record(t, "secure_flood_scrapes_ok", float64(s.ok), "scrapes", fmt.Sprintf("first failure: %s", s.firstFailure))
	measurements.Record(t, "secure_flood_scrapes", float64(len(s.latencies)), "scrapes")
	measurements.Duration(t, "secure_flood_scrape_latency_median", s.median())
	measurements.Duration(t, "secure_flood_scrape_latency_max", s.max())
	if s.ok != len(s.latencies) || s.ok < int(elapsed/time.Second) {
		t.Errorf("%d of %d scrapes with the PodMonitor's token answered 200 during the flood: %s", s.ok, len(s.latencies), s.firstFailure)
	}
	if reviews > bound {
		t.Errorf("the API server saw %d TokenReviews in %v of flood; the budget allows %d", reviews, elapsed.Round(time.Millisecond), bound)
	}
	if f.throttled == 0 || f.unauthorized == 0 || f.other != 0 {
		t.Errorf("flood answers: 401 %d, 429 %d, other %d; want both 401s (within the budget) and 429s, nothing else", f.unauthorized, f.throttled, f.other)
	}
	_, text := harness.MustGet(t, base+"/metrics", harness.Token(scraper), harness.Client(harness.SecureClient))
	if got := harness.MetricValue(text, `hangwatch_secure_requests_total{result="throttled"}`); int(got) != f.throttled {
		t.Errorf("hangwatch counted %v throttled requests, the flood got %d 429s", got, f.throttled)
	}
	holdUp(t, d, secure, scraper)
}

// holdUp opens 64 silent connections from 127.0.0.2 and 64 from 127.0.0.3
// that each sent one request without a token, then scrapes with a new
// connection from 127.0.0.1.
func holdUp(t *testing.T, d *hangwatch.Daemon, addr, token string) {
	t.Helper()
	silent := dialMany(t, "127.0.0.2", addr, 64)
	refused := dialMany(t, "127.0.0.3", addr, 64)
	var wg sync.WaitGroup
	for _, c := range refused {
		wg.Go(func() { sendUnauthenticated(c) })
	}
	wg.Wait()
	start := time.Now()
	code, err := getFrom("127.0.0.1", "https://"+addr+"/metrics", token, false)
	took := time.Since(start)
	harness.Measure(t, "secure_holdup_scrape", took)
	if err != nil || code != http.StatusOK || took > 3*time.Second {
		t.Errorf("a scrape beside 128 held connections: %d %v after %v, want 200 within 3 s", code, err, took)
	}
	openSilent, openRefused := stillOpen(silent, time.Second), stillOpen(refused, time.Second)
	measurements.Record(t, "secure_holdup_silent_connections_kept", float64(openSilent), "connections", "of 64")
	measurements.Record(t, "secure_holdup_refused_connections_kept", float64(openRefused), "connections", "of 64, after a 401")
	if openSilent > 8 || openRefused != 0 {
		t.Errorf("kept %d silent connections from one address (at most 8) and %d after a 401 (none)", openSilent, openRefused)
	}
	if _, err := d.Get("/healthz"); err != nil {
		t.Errorf("hangwatch after the hold-up: %v", err)
	}
}

func dialMany(t *testing.T, local, addr string, n int) []net.Conn {
	t.Helper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	var conns []net.Conn
	for range n {
		c, err := dialer.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %s from %s: %v", addr, local, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// sendUnauthenticated does the TLS handshake on c, if the server still
// has it, and sends one request without a token; then c idles.
func sendUnauthenticated(c net.Conn) {
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // hangwatch's self-signed certificate
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(tc, "GET /metrics HTTP/1.1\r\nHost: hangwatch\r\n\r\n"); err != nil {
		return
	}
	_, _ = tc.Read(make([]byte, 512)) // the 401's head
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
			var err error
			for err == nil {
				_, err = c.Read(make([]byte, 4096))
			}
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

type floodResult struct {
	sent, unauthorized, throttled, other, errors int
	firstErr                                     error
}

// flood sends n requests with made-up tokens from workers goroutines,
// worker i from 127.0.0.(10+i).
func flood(url string, n, workers int) floodResult {
	var next atomic.Int64
	var mu sync.Mutex
	r := floodResult{}
	var wg sync.WaitGroup
	for w := range workers {
		local := fmt.Sprintf("127.0.0.%d", 10+w)
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				code, err := getFrom(local, url, fmt.Sprintf("hw-made-up-token-%d", i), true)
				mu.Lock()
				r.count(code, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return r
}

func (r *floodResult) count(code int, err error) {
	r.sent++
	switch {
	case err != nil:
		r.errors++
		if r.firstErr == nil {
			r.firstErr = err
		}
	case code == http.StatusUnauthorized:
		r.unauthorized++
	case code == http.StatusTooManyRequests:
		r.throttled++
	default:
		r.other++
	}
}

// clients from each loopback address, one for keep-alive requests and
// one that dials anew (a client per request would leave the connections
// it kept).
var (
	clientsMu sync.Mutex
	clients   = map[string]*http.Client{}
)

func clientFrom(local string, keepAlive bool) *http.Client {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	key := fmt.Sprint(local, keepAlive)
	if c := clients[key]; c != nil {
		return c
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: !keepAlive,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // hangwatch's self-signed certificate
	clients[key] = c
	return c
}

// getFrom asks url with token from the loopback address local.
func getFrom(local, url, token string, keepAlive bool) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := clientFrom(local, keepAlive).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

type scrapeLog struct {
	ok           int
	latencies    []time.Duration
	firstFailure string
}

// scrapePeriodically scrapes url with token from 127.0.0.1 every period until stop.
func scrapePeriodically(url, token string, period time.Duration, stop <-chan struct{}) scrapeLog {
	var s scrapeLog
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		start := time.Now()
		code, err := getFrom("127.0.0.1", url, token, true)
		s.latencies = append(s.latencies, time.Since(start))
		if err == nil && code == http.StatusOK {
			s.ok++
		} else if s.firstFailure == "" {
			s.firstFailure = fmt.Sprintf("%d %v after %v", code, err, time.Since(start))
		}
		select {
		case <-stop:
			return s
		case <-tick.C:
		}
	}
}

func (s scrapeLog) median() time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(s.latencies))
	return sorted[len(sorted)/2].Round(time.Millisecond)
}

func (s scrapeLog) max() time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	return slices.Max(s.latencies).Round(time.Millisecond)
}

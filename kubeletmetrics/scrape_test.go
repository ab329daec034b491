package kubeletmetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func scrapeKind(t *testing.T, o Options) (ErrorKind, error) {
	t.Helper()
	s, err := NewScraper(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Scrape(context.Background())
	return Kind(err), err
}

func TestScrapeFailuresAreClassified(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select { // a kubelet blocked on a frozen runtime
		case <-release:
		case <-r.Context().Done():
		}
	})
	status := func(code int) *httptest.Server {
		return serve(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, http.StatusText(code), code) })
	}
	garbage := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("kubelet_pleg_last_seen_seconds 1\n<html>\n"))
	})
	cases := []struct {
		name string
		url  string
		want ErrorKind
	}{
		{"hang", hang.URL + "/metrics", KindTimeout},
		{"401", status(401).URL, KindUnauthorized},
		{"403", status(403).URL, KindForbidden},
		{"500", status(500).URL, KindHTTP},
		{"garbage", garbage.URL, KindParse},
		{"refused", "http://127.0.0.1:1/metrics", KindUnreachable},
	}
	for _, c := range cases {
		start := time.Now()
		kind, err := scrapeKind(t, Options{URL: c.url, Timeout: 300 * time.Millisecond})
		if kind != c.want {
			t.Errorf("%s: kind %q (%v), want %q", c.name, kind, err, c.want)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%s: the scrape outlived its deadline", c.name)
		}
	}
}

func TestScrapeTLS(t *testing.T) {
	body := readAll(t, "testdata/kubelet-1.34-healthy.prom")
	var gotAuth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if kind, err := scrapeKind(t, Options{URL: srv.URL, TokenFile: tokenFile}); kind != KindTLS {
		t.Errorf("unknown CA: kind %q (%v), want tls_error", kind, err)
	}
	s, err := NewScraper(Options{URL: srv.URL, TokenFile: tokenFile, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Scrape(context.Background())
	if err != nil || !snap.HasLastSeen {
		t.Fatalf("scrape: %v", err)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization = %q", gotAuth)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := map[string]Options{
		"--kubelet-metrics-url":                {URL: "10.0.0.1:10250"},
		"allowed only for a loopback":          {URL: "https://10.0.0.1:10250/metrics", InsecureSkipVerify: true},
		"credentials are sent only over https": {URL: "http://127.0.0.1:10255/metrics", TokenFile: "/t"},
		"give one":                             {URL: "https://127.0.0.1:10250/metrics", InsecureSkipVerify: true, CAFile: "/ca"},
	}
	for want, o := range bad {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want it to say %q", o, err, want)
		}
	}
	for _, ok := range []Options{{URL: "https://[::1]:10250/metrics", InsecureSkipVerify: true}, {URL: "https://localhost:10250/metrics", InsecureSkipVerify: true}, {URL: "http://127.0.0.1:10255/metrics"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestEventedFromConfigz(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/configz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"kubeletconfig":{"featureGates":{"EventedPLEG":true}}}`))
	})
	s, err := NewScraper(Options{URL: srv.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.EventedFromConfigz(context.Background())
	if err != nil || !ev.On || ev.Source != "configz" {
		t.Fatalf("configz: %+v %v", ev, err)
	}
	if ev := EventedFromMetrics(parseFile(t, "testdata/kubelet-1.34-evented-on-derived.prom")); !ev.On {
		t.Error("Evented PLEG not seen from the connection counter")
	}
	if ev := EventedFromMetrics(parseFile(t, "testdata/kubelet-1.34-healthy.prom")); ev.On || !ev.Known {
		t.Errorf("healthy 1.34: %+v, want known off", ev)
	}
}

// A redirect is the answer, never followed: following it would hand the
// token to wherever it points.
func TestScrapeRefusesRedirects(t *testing.T) {
	var followed bool
	elsewhere := serve(t, func(w http.ResponseWriter, r *http.Request) {
		followed = true
		_, _ = w.Write([]byte("kubelet_pleg_last_seen_seconds 1\n"))
	})
	redirect := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/metrics", http.StatusFound)
	})
	kind, err := scrapeKind(t, Options{URL: redirect.URL + "/metrics", Timeout: time.Second})
	if kind != KindHTTP || !strings.Contains(fmt.Sprint(err), "302") {
		t.Errorf("a redirect: %s %v; want http_error naming 302", kind, err)
	}
	if followed {
		t.Error("the redirect was followed")
	}
}

func TestForNodeNamesTheNodeForALoopbackCA(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{URL: "https://127.0.0.1:10250/metrics", CAFile: "ca.crt"}, "node-a"},
		{Options{URL: "https://localhost:10250/metrics", CAFile: "ca.crt"}, "node-a"},
		{Options{URL: "https://127.0.0.1:10250/metrics", CAFile: "ca.crt", ServerName: "given"}, "given"},
		{Options{URL: "https://10.0.0.5:10250/metrics", CAFile: "ca.crt"}, ""},
		{Options{URL: "https://127.0.0.1:10250/metrics"}, ""},
		{Options{URL: "http://127.0.0.1:10255/metrics", CAFile: "ca.crt"}, ""},
	}
	for _, c := range cases {
		if got := c.o.ForNode("node-a").ServerName; got != c.want {
			t.Errorf("%+v: server name %q, want %q", c.o, got, c.want)
		}
	}
	if !(Options{URL: "https://127.0.0.1:10250/metrics", InsecureSkipVerify: true}).SkipsVerification() {
		t.Error("insecure https not reported as skipping verification")
	}
}

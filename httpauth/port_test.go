package httpauth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/httpauth/httpauthtest"
)

// TestNewPortReviewsCallersWithTheAPIServer: the port both binaries open
// asks the API server about each caller's token and request, serves
// those allowed, counts each result, and names its hosts in its
// self-signed certificate.
func TestNewPortReviewsCallersWithTheAPIServer(t *testing.T) {
	api := httpauthtest.NewAPIServer(t, map[string]string{"scraper-token": "prometheus", "other-token": "someone"},
		func(user string, a authzv1.SubjectAccessReviewSpec) bool {
			return user == "prometheus" && a.NonResourceAttributes != nil && a.NonResourceAttributes.Path == "/metrics"
		})
	reg := metrics.NewKubeRegistry()
	port, err := NewPort(PortOptions{Address: "127.0.0.1:0", API: api.Config, Names: []string{"node-a"}, CacheTTL: time.Minute,
		Clock: testclock.NewFakePassiveClock(time.Now()), Registry: reg, RequestsMetric: "test_secure_requests_total"})
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Listen(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = port.Serve() }()
	t.Cleanup(func() { _ = port.Close(); <-done })
	leaf, err := x509.ParseCertificate(port.tls.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node-a", "localhost", "::1", "127.0.0.1"} {
		if leaf.VerifyHostname(want) != nil {
			t.Errorf("the self-signed certificate does not name %s", want)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- self-signed
	for _, c := range []struct {
		token string
		want  int
	}{{"scraper-token", http.StatusOK}, {"other-token", http.StatusForbidden}, {"nobody", http.StatusUnauthorized}} {
		if code, _ := get(t, client, "https://"+port.Addr()+"/metrics", c.token); code != c.want {
			t.Errorf("token %s: HTTP %d, want %d", c.token, code, c.want)
		}
	}
	want := `
# HELP test_secure_requests_total [ALPHA] ` + ResultsHelp + `
# TYPE test_secure_requests_total counter
test_secure_requests_total{result="allowed"} 1
test_secure_requests_total{result="forbidden"} 1
test_secure_requests_total{result="unauthenticated"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "test_secure_requests_total"); err != nil {
		t.Error(err)
	}
}

func TestNewPortNeedsAnAPIServer(t *testing.T) {
	_, err := NewPort(PortOptions{Address: "0.0.0.0:9767", Registry: metrics.NewKubeRegistry(), RequestsMetric: "x_total"})
	if err == nil || !strings.Contains(err.Error(), "--secure-listen-address 0.0.0.0:9767: needs an API server") {
		t.Errorf("no API server: %v", err)
	}
}

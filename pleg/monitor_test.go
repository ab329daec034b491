package pleg

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/metricslint"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

var lastSeenLine = regexp.MustCompile(`(?m)^kubelet_pleg_last_seen_seconds .*$`)

// kubelet serves the real 1.34 capture with the gauge at *lastSeen.
func kubelet(t *testing.T, lastSeen *atomic.Int64) *httptest.Server {
	body, err := os.ReadFile("../kubeletmetrics/testdata/kubelet-1.34-healthy.prom")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Error(w, "Forbidden (user=x, verb=get, resource=nodes, subresource(s)=[proxy])", http.StatusForbidden)
			return
		}
		_, _ = w.Write(lastSeenLine.ReplaceAll(body, []byte(fmt.Sprintf("kubelet_pleg_last_seen_seconds %d", lastSeen.Load()))))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// scrapingSetup is a fake clock and a kubelet whose gauge says now, with
// a scraper for it.
func scrapingSetup(t *testing.T) (*clocktesting.FakeClock, *atomic.Int64, *httptest.Server, *kubeletmetrics.Scraper) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1795300600, 0))
	lastSeen := &atomic.Int64{}
	lastSeen.Store(clk.Now().Unix())
	srv := kubelet(t, lastSeen)
	sc, err := kubeletmetrics.NewScraper(kubeletmetrics.Options{URL: srv.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	return clk, lastSeen, srv, sc
}

func TestMonitorScrapes(t *testing.T) {
	clk, _, _, sc := scrapingSetup(t)
	reg := metrics.NewKubeRegistry()
	var got []Assessment
	m := NewMonitor(Options{Config: DefaultConfig(), Scraper: sc, Window: 5 * time.Minute, Metrics: NewMetrics(reg),
		OnAssessment: func(a Assessment) { got = append(got, a) }}, clk)
	m.ScrapeOnce(context.Background())
	if got[0].Verdict != VerdictHealthy || got[0].EventedPLEG {
		t.Fatalf("first scrape: %+v", got[0])
	}
	clk.Step(90 * time.Second) // the kubelet's relist stops: the gauge stays
	m.ScrapeOnce(context.Background())
	if a := got[1]; a.Reason != ReasonStalled || *a.LastSeenAgeSeconds != 90 {
		t.Errorf("stale gauge: %+v", a)
	}
	obs := got[1].Observation()
	if obs.Verdict != VerdictUnhealthy || obs.LastSeenAgeSeconds == nil || *obs.LastSeenAgeSeconds != 90.0 {
		t.Errorf("observation = %v", obs)
	}
	names := metricslint.Check(t, reg)
	for _, n := range []string{"hangwatch_pleg_last_seen_age_seconds", "hangwatch_kubelet_metrics_scrapes_total", "hangwatch_pleg_relist_p99_seconds"} {
		if !names[n] {
			t.Errorf("%s not exported", n)
		}
	}
}

func TestMonitorHungScrapeIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	sc, err := kubeletmetrics.NewScraper(kubeletmetrics.Options{URL: srv.URL + "/metrics", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	m := NewMonitor(Options{Config: DefaultConfig(), Scraper: sc, Window: time.Minute}, clk)
	m.ScrapeOnce(context.Background())
	a := m.Assess()
	if a.ScrapeError != string(kubeletmetrics.KindTimeout) || a.Verdict != VerdictUnknown {
		t.Errorf("hung scrape: %+v", a)
	}
}

// TestEmulationRunsOnlyWhenTheGaugeCannotTell steps through the states in
// which the emulated relist is, and is not, worth its CRI calls.
func TestEmulationRunsOnlyWhenTheGaugeCannotTell(t *testing.T) {
	clk, lastSeen, srv, sc := scrapingSetup(t)
	m := NewMonitor(Options{Config: DefaultConfig(), Scraper: sc, Window: 5 * time.Minute,
		Metrics: NewMetrics(metrics.NewKubeRegistry())}, clk)
	if m.emulationNeeded() {
		t.Error("needed before the first scrape answered")
	}
	m.ScrapeOnce(context.Background())
	if m.emulationNeeded() {
		t.Error("needed although the kubelet's gauge is fresh")
	}
	clk.Step(10 * time.Second)
	if m.emulationNeeded() {
		t.Error("needed only because the last scrape is a period old")
	}
	m.ScrapeOnce(context.Background()) // the gauge has not moved: the relist is 10 s old
	if !m.emulationNeeded() {
		t.Error("not needed although the kubelet's last relist was 10 s old when scraped")
	}
	lastSeen.Store(clk.Now().Unix())
	m.ScrapeOnce(context.Background())
	clk.Step(DefaultConfig().StaleAfter)
	if !m.emulationNeeded() {
		t.Error("not needed although no scrape has answered for the stale-after time")
	}
	srv.Close() // the scrape now fails
	lastSeen.Store(clk.Now().Unix())
	m.ScrapeOnce(context.Background())
	if !m.emulationNeeded() {
		t.Error("not needed although the scrape failed")
	}
	none := NewMonitor(Options{Config: DefaultConfig(), Metrics: NewMetrics(metrics.NewKubeRegistry())}, clk)
	if !none.emulationNeeded() {
		t.Error("not needed without a scraper")
	}
}

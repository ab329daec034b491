package integration

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// badKubelets are /metrics endpoints that hang, refuse or answer garbage.
func badKubelets(t *testing.T) map[string]string {
	t.Helper()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE kubelet_pleg_last_seen_seconds gauge\nkubelet_pleg_last_seen_seconds 1.7e9\n<html><body>proxy error</body></html>\n"))
	}))
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(func() { close(release); hang.Close(); garbage.Close(); unauthorized.Close() })
	return map[string]string{"hang": hang.URL + "/metrics", "garbage": garbage.URL + "/metrics", "401": unauthorized.URL + "/metrics"}
}

func TestDiagExplainsBadKubeletScrapes(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	want := map[string]string{"hang": "did not answer in time", "garbage": "line 3", "401": "401"}
	for name, url := range badKubelets(t) {
		r, _, elapsed := runDiag(t, c.Endpoint, "--kubelet-metrics-url", url, "--kubelet-metrics-timeout", "2s")
		sig := r.PLEG.signal("scrape")
		t.Logf("%s: %s (%v); verdict %s from %d signals", name, sig.Detail, elapsed.Round(time.Millisecond), r.PLEG.Verdict, len(r.PLEG.Signals))
		if sig.State != "problem" || !contains(sig.Detail, want[name]) {
			t.Errorf("%s: scrape signal %+v, want a problem saying %q", name, sig, want[name])
		}
		if r.PLEG.Verdict != "Healthy" || r.PLEG.signal("emulation").State != "ok" {
			t.Errorf("%s: the emulation should still judge the PLEG: %+v", name, r.PLEG)
		}
		if elapsed > 2*hangwatch.ProbeTimeout+hangwatch.GenerousSlack {
			t.Errorf("%s: diag took %v", name, elapsed)
		}
	}
}

func TestHungKubeletScrapeDoesNotStallTheProbes(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel=false", "--period", "1s", "--kubelet-metrics-url", badKubelets(t)["hang"],
		"--kubelet-metrics-timeout", "3s", "--kubelet-metrics-period", "1s", "--pleg-emulation-period", "1s")
	start := time.Now()
	harness.Eventually(t, 30*time.Second, "5 probe cycles, several emulated relists and a timed-out scrape", func() bool {
		m, err := d.Get("/metrics")
		return err == nil && harness.MetricValue(m, `hangwatch_cri_probes_total{method="Version",result="ok"}`) >= 5 &&
			harness.MetricValue(m, `hangwatch_pleg_emulated_relists_total{result="ok"}`) >= 5 &&
			harness.MetricValue(m, `hangwatch_kubelet_metrics_scrapes_total{result="timeout"}`) >= 1
	}, harness.UnlessExited(d))
	t.Logf("5 probe cycles and 5 emulated relists in %v while every scrape hung", time.Since(start).Round(time.Millisecond))
	if s, reason, _ := d.Condition(t, "PLEGUnhealthy"); s != "False" {
		t.Errorf("PLEGUnhealthy=%s (%s): a hung scrape alone must not raise it", s, reason)
	}
	if s, _, _ := d.Condition(t, "RuntimeHung"); s != "False" {
		t.Errorf("RuntimeHung=%s", s)
	}
}

package integration

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

func TestRunRaisesAndClearsRuntimeHung(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	const period, timeout = time.Second, time.Second
	d := hangwatch.StartDaemon(t, c.Endpoint, "--period", period.String(), "--max-period", "2s", "-t", timeout.String())
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))

	thaw := harness.Freeze(t, c)
	frozeAt := time.Now()
	harness.Eventually(t, period+timeout+hangwatch.GenerousSlack+10*time.Second, "RuntimeHung True", func() bool { return d.RuntimeHung(t) == "True" }, harness.UnlessExited(d))
	raised := time.Since(frozeAt)
	harness.Measure(t, "run_runtimehung_raised_after_freeze", raised)
	if raised > period+timeout+hangwatch.GenerousSlack {
		t.Errorf("RuntimeHung took %v, want within period+timeout (%v) plus slack", raised, period+timeout)
	}
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := harness.MetricValue(text, `hangwatch_cri_call_in_flight_seconds{method="ListPodSandbox"}`); v < timeout.Seconds() {
		t.Errorf("ListPodSandbox in-flight age = %v, want at least %v while frozen", v, timeout.Seconds())
	}
	if v := harness.MetricValue(text, `hangwatch_cri_probes_total{method="Version",result="timeout"}`); v < 1 {
		t.Errorf("Version timeouts = %v, want at least 1", v)
	}

	thaw()
	thawedAt := time.Now()
	harness.Eventually(t, 60*time.Second, "RuntimeHung False after thaw", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	harness.Measure(t, "run_runtimehung_cleared_after_thaw", time.Since(thawedAt))
	// A probe of the next cycle may be in flight at a scrape, for a few
	// milliseconds; the frozen call's age must be gone, so read until 0.
	harness.Eventually(t, 10*time.Second, "ListPodSandbox in-flight age 0 after thaw", func() bool {
		text, err := d.Get("/metrics")
		return err == nil && harness.MetricValue(text, `hangwatch_cri_call_in_flight_seconds{method="ListPodSandbox"}`) == 0
	}, harness.UnlessExited(d))

	d.Stop(t)
}

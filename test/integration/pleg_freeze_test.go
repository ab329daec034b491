package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// waitRunningSandboxes waits until the kubelet's pods have n ready sandboxes.
func waitRunningSandboxes(t *testing.T, d *hangwatch.Daemon, c kubelet.NodeRuntime, n int) {
	t.Helper()
	harness.Eventually(t, 90*time.Second, fmt.Sprintf("%d ready sandboxes", n), func() bool {
		resp, err := c.Runtime().ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{
			Filter: &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
		return err == nil && len(resp.Items) >= n
	}, harness.UnlessExited(d))
}

func TestFrozenRuntimeRaisesPLEGUnhealthyWhileKubeletReady(t *testing.T) {
	harness.Parallel(t)
	frozenPLEG(t, "RelistStalled", 60*time.Second)
}

// Without the emulation, the kubelet's own gauge must do it: its last
// relist passes --pleg-stale-after (30 s) while the kubelet still says Ready
// (it says "PLEG is not healthy" only at 3 min).
func TestFrozenRuntimeRaisesPLEGUnhealthyFromKubeletMetricsAlone(t *testing.T) {
	harness.Parallel(t)
	frozenPLEG(t, "RelistStalled", 90*time.Second, "--pleg-emulation-period", "0")
}

func frozenPLEG(t *testing.T, wantReason string, limit time.Duration, extra ...string) {
	n := hangwatch.StartKubeletNode(t)
	for i := 0; i < 2; i++ {
		if err := n.K.StaticPod(fmt.Sprintf("web-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d := hangwatch.PLEGDaemon(t, n, extra...)
	waitRunningSandboxes(t, d, n.C, 2)
	harness.Eventually(t, 60*time.Second, "PLEGUnhealthy=False", func() bool { s, _, _ := d.Condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	if len(extra) == 0 {
		captureKubeletMetrics(t, n.K)
	}

	thaw := harness.Freeze(t, n.C)
	start := time.Now()
	var reason, msg string
	harness.Eventually(t, limit, "PLEGUnhealthy=True", func() bool {
		var s string
		s, reason, msg = d.Condition(t, "PLEGUnhealthy")
		return s == "True"
	}, harness.UnlessExited(d))
	lead := time.Since(start)
	ready, readyMsg := n.K.Ready(t.Context(), n.CP)
	harness.Measure(t, "freeze -> PLEGUnhealthy=True", lead)
	t.Logf("reason %s: %s; kubelet's Ready=%v (%s)", reason, msg, ready, readyMsg)
	if reason != wantReason {
		t.Errorf("reason %s, want %s", reason, wantReason)
	}
	if !ready {
		t.Errorf("the kubelet already reported NotReady (%s): hangwatch was not early", readyMsg)
	}
	metrics, _ := d.Get("/metrics")
	t.Logf("scrapes during the freeze: ok %v, timeout %v",
		harness.MetricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="ok"}`), harness.MetricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="timeout"}`))

	thaw()
	start = time.Now()
	harness.Eventually(t, 90*time.Second, "PLEGUnhealthy=False after the thaw", func() bool { s, _, _ := d.Condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	harness.Measure(t, "thaw -> PLEGUnhealthy=False", time.Since(start))
}

// captureKubeletMetrics writes the kubelet's /metrics to kubeletmetrics
// testdata when HANGWATCH_CAPTURE=1 (kubelet-1.34-harness.prom).
func captureKubeletMetrics(t *testing.T, k *kubelet.Kubelet) {
	if os.Getenv("HANGWATCH_CAPTURE") != "1" {
		return
	}
	_, body := harness.MustGet(t, k.ReadOnlyMetricsURL())
	path := filepath.Join(harness.ModuleRoot(), "kubeletmetrics", "testdata", "kubelet-1.34-harness.prom")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d bytes of kubelet metrics to %s", len(body), path)
}

// TestHealthyNodeWithPodChurnStaysPLEGHealthy churns pods for a minute on
// a healthy node (scenarios.PodChurnStaysPLEGHealthy); test/bench churns
// for 10.
func TestHealthyNodeWithPodChurnStaysPLEGHealthy(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	scenarios.PodChurnStaysPLEGHealthy(t, time.Minute)
}

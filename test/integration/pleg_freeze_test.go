package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
)

// plegDaemon runs hangwatch against the kubelet node with its metrics
// (ServiceAccount token with nodes/metrics) and the relist emulation.
func plegDaemon(t *testing.T, n kubeletNode, extra ...string) *daemon {
	t.Helper()
	token := harness.TokenFile(t, n.cp.ServiceAccountToken(t, "hw-pleg-"+n.k.Node, getNodesMetrics))
	args := []string{"--kernel=false", "--period", "2s",
		"--kubelet-metrics-url", n.k.MetricsURL(), "--kubelet-ca-file", n.k.ServingCert, "--kubelet-tls-server-name", n.k.Node,
		"--kubelet-token-file", token, "--kubelet-metrics-period", "5s", "--pleg-emulation-period", "2s"}
	return startDaemon(t, n.c.Where().Endpoint, append(args, extra...)...)
}

// waitRunningSandboxes waits until the kubelet's pods have n ready sandboxes.
func waitRunningSandboxes(t *testing.T, d *daemon, c harness.NodeRuntime, n int) {
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
	n := startKubeletNode(t)
	for i := 0; i < 2; i++ {
		if err := n.k.StaticPod(fmt.Sprintf("web-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d := plegDaemon(t, n, extra...)
	waitRunningSandboxes(t, d, n.c, 2)
	harness.Eventually(t, 60*time.Second, "PLEGUnhealthy=False", func() bool { s, _, _ := d.condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	if len(extra) == 0 {
		captureKubeletMetrics(t, n.k)
	}

	thaw := freeze(t, n.c)
	start := time.Now()
	var reason, msg string
	harness.Eventually(t, limit, "PLEGUnhealthy=True", func() bool {
		var s string
		s, reason, msg = d.condition(t, "PLEGUnhealthy")
		return s == "True"
	}, harness.UnlessExited(d))
	lead := time.Since(start)
	ready, readyMsg := n.k.Ready(t.Context(), n.cp)
	measure(t, "freeze -> PLEGUnhealthy=True", lead)
	t.Logf("reason %s: %s; kubelet's Ready=%v (%s)", reason, msg, ready, readyMsg)
	if reason != wantReason {
		t.Errorf("reason %s, want %s", reason, wantReason)
	}
	if !ready {
		t.Errorf("the kubelet already reported NotReady (%s): hangwatch was not early", readyMsg)
	}
	metrics, _ := d.get("/metrics")
	t.Logf("scrapes during the freeze: ok %v, timeout %v",
		metricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="ok"}`), metricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="timeout"}`))

	thaw()
	start = time.Now()
	harness.Eventually(t, 90*time.Second, "PLEGUnhealthy=False after the thaw", func() bool { s, _, _ := d.condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	measure(t, "thaw -> PLEGUnhealthy=False", time.Since(start))
}

// captureKubeletMetrics writes the kubelet's /metrics to kubeletmetrics
// testdata when HANGWATCH_CAPTURE=1 (kubelet-1.34-harness.prom).
func captureKubeletMetrics(t *testing.T, k *harness.Kubelet) {
	if os.Getenv("HANGWATCH_CAPTURE") != "1" {
		return
	}
	resp, err := http.Get(k.ReadOnlyMetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(harness.ModuleRoot(), "kubeletmetrics", "testdata", "kubelet-1.34-harness.prom")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d bytes of kubelet metrics to %s", len(body), path)
}

// churnDuration is how long the pod churn test runs: 60s in the test
// command, 10 minutes in the benchmarks (go test -tags bench).
func churnDuration(t *testing.T) time.Duration {
	t.Helper()
	if harness.InSuite(harness.SuiteBench) {
		return 10 * time.Minute
	}
	return time.Minute
}

func TestHealthyNodeWithPodChurnStaysPLEGHealthy(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	n := startKubeletNode(t)
	d := plegDaemon(t, n)
	harness.Eventually(t, 60*time.Second, "PLEGUnhealthy=False", func() bool { s, _, _ := d.condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	churn, checks := &podChurn{k: n.k}, 0
	nextPod := time.Now()
	var s, reason, msg string
	harness.Throughout(t, churnDuration(t), "PLEGUnhealthy=False on a healthy node with pod churn", func() bool {
		if time.Now().After(nextPod) {
			churn.step(t)
			nextPod = time.Now().Add(3 * time.Second)
		}
		s, reason, msg = d.condition(t, "PLEGUnhealthy")
		checks++
		return s == "False"
	}, harness.Every(500*time.Millisecond), harness.UnlessExited(d), harness.Explaining(func() string {
		return fmt.Sprintf("PLEGUnhealthy=%s (%s: %s) after %d pods created, %d deleted", s, reason, msg, churn.created, churn.deleted)
	}))
	metrics, _ := d.get("/metrics")
	t.Logf("%v of churn: %d pods created, %d deleted, %d checks, PLEGUnhealthy False throughout; emulated relists ok %v, last %.4fs; scrapes ok %v; kubelet relist p99 %v s",
		churnDuration(t), churn.created, churn.deleted, checks, metricValue(metrics, `hangwatch_pleg_emulated_relists_total{result="ok"}`),
		metricValue(metrics, "hangwatch_pleg_emulated_relist_seconds"), metricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="ok"}`),
		metricValue(metrics, "hangwatch_pleg_relist_p99_seconds"))
}

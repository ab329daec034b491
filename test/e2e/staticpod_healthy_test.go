package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// healthyRunDuration is HANGWATCH_E2E_HEALTHY, 10m by default (hack/e2e.sh
// takes it as an argument); the run is in the e2e suite.
func healthyRunDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("HANGWATCH_E2E_HEALTHY")
	if v == "" {
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("HANGWATCH_E2E_HEALTHY=%q: %v", v, err)
	}
	return d
}

// healthyRunPods is HANGWATCH_E2E_PODS, 100 by default (hack/e2e.sh's
// matrix runs fewer).
func healthyRunPods(t *testing.T) int {
	t.Helper()
	v := os.Getenv("HANGWATCH_E2E_PODS")
	if v == "" {
		return 100
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HANGWATCH_E2E_PODS=%q: want a count of pods", v)
	}
	return n
}

// TestStaticPodHealthyNodeRaisesNothing runs 100 pods on the node, creates
// and deletes pods continuously under CPU load, and checks hangwatch (the
// static pod) raises no condition; it measures hangwatch's footprint: RSS,
// CPU and the CRI calls it adds next to the kubelet's own.
func TestStaticPodHealthyNodeRaisesNothing(t *testing.T) {
	d := healthyRunDuration(t)
	n := hangwatch.StartStaticPodNode(t)
	n.WaitHealthy(t)
	pods := healthyRunPods(t)
	for i := 0; i < pods; i++ {
		if err := n.K.StaticPod("steady-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 5*time.Minute, fmt.Sprintf("%d static pods running besides hangwatch", pods),
		func() bool { return n.CountRunningContainers() > pods }, harness.Every(time.Second),
		harness.Explaining(func() string { return fmt.Sprintf("%d containers running", n.CountRunningContainers()) }))
	pid := hangwatchPID(t)
	stopLoad := harness.BurnCPU(t, runtime.NumCPU()/2)
	defer stopLoad()
	before := n.FootprintSample(t, pid)
	churn := &scenarios.PodChurn{K: n.K}
	checks, peak, maxLastSeen := 0, before.Rss, 0.0
	var raised string
	harness.Throughout(t, d, "the 4 conditions False on a healthy node", func() bool {
		if checks%3 == 0 {
			churn.Step(t)
		}
		checks++
		for _, c := range []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock", "KubeletUnresponsive"} {
			if cond := hangwatch.NodeCond(t, n.CP, n.K.Node, c); cond == nil || cond.Status != corev1.ConditionFalse {
				raised = fmt.Sprintf("%s=%+v", c, cond)
				return false
			}
		}
		_, now := harness.ReadFootprint(t, pid)
		peak = peak.Max(now)
		if checks%15 == 0 { // as often as the PodMonitor scrapes: /metrics costs hangwatch CPU
			maxLastSeen = max(maxLastSeen, harness.SumSeries(n.HangwatchMetrics(t), "hangwatch_pleg_last_seen_age_seconds"))
		}
		return true
	}, harness.Every(time.Second), harness.Explaining(func() string {
		return fmt.Sprintf("%s, %d pods created and %d deleted", raised, churn.Created, churn.Deleted)
	}))
	measurements.Record(t, "e2e_healthy_max_pleg_last_seen_age_seconds", maxLastSeen, "s")
	n.AssertNotShared(t) // the kubelet has patched its status many times by now
	after := n.FootprintSample(t, pid)
	reportFootprint(t, d, before, after, peak)
	t.Logf("%v healthy run: %d steady pods, %d churn pods created, %d deleted, %d checks of the 4 conditions: all False throughout", d, pods, churn.Created, churn.Deleted, checks)
	measurements.Duration(t, "e2e_healthy_run", d)
	measurements.Record(t, "e2e_healthy_steady_pods", float64(pods), "pods")
	measurements.Record(t, "e2e_healthy_churn_pods_created", float64(churn.Created), "pods")
	measurements.Record(t, "e2e_healthy_churn_pods_deleted", float64(churn.Deleted), "pods")
	measurements.Record(t, "e2e_healthy_condition_checks", float64(checks), "checks", "the 4 conditions, all False throughout")
}

func reportFootprint(t *testing.T, d time.Duration, a, b harness.Footprint, peak harness.RSS) {
	t.Helper()
	secs := b.At.Sub(a.At).Seconds()
	cpu := (b.Cpu - a.Cpu).Seconds() / secs
	hwPerMin := (b.HangwatchCalls - a.HangwatchCalls) / secs * 60
	klPerMin := (b.KubeletCalls - a.KubeletCalls) / secs * 60
	measurements.Record(t, "e2e_footprint_rss_steady_mib", float64(b.Rss.TotalKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_peak_mib", float64(peak.TotalKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_anon_steady_mib", float64(b.Rss.AnonKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_anon_peak_mib", float64(peak.AnonKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_cpu_percent_of_a_core", cpu*100, "% of a core")
	measurements.Record(t, "e2e_cri_calls_per_min_hangwatch", hwPerMin, "calls/min")
	measurements.Record(t, "e2e_cri_calls_per_min_kubelet", klPerMin, "calls/min")
	if klPerMin > 0 {
		measurements.Record(t, "e2e_cri_calls_hangwatch_share_percent", hwPerMin/klPerMin*100, "%")
	}
	for _, name := range []string{"hangwatch_cri_probes_total", "hangwatch_pleg_emulated_relists_total", "hangwatch_kubelet_metrics_scrapes_total"} {
		t.Logf("over the run, %s grew by %s", name, harness.SeriesGrowth(a.HangwatchText, b.HangwatchText, name))
	}
	if float64(peak.TotalKiB)/1024 > 20 {
		t.Logf("peak RSS %.1f MiB is over the 20 MiB goal (anonymous memory %.1f MiB; the rest is the binary's mapped pages)",
			float64(peak.TotalKiB)/1024, float64(peak.AnonKiB)/1024)
	}
}

// hangwatchPID finds the static pod's process: /hangwatch run --config=...
func hangwatchPID(t *testing.T) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	best := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.HasPrefix(string(cmd), "/hangwatch\x00run\x00--config=/etc/hangwatch/config.yaml") && pid > best {
			best = pid
		}
	}
	if best == 0 {
		t.Fatal("the static pod's hangwatch process was not found")
	}
	return best
}

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// healthyRunDuration is HANGWATCH_E2E_HEALTHY, 10m by default (hack/e2e.sh
// takes it as an argument); the run is in the e2e suite.
func healthyRunDuration(t *testing.T) time.Duration {
	t.Helper()
	harness.RequireSuite(t, harness.SuiteE2E, "the healthy run with 100 pods takes minutes; hack/e2e.sh runs it")
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
	harness.Parallel(t, harness.LaneKmsg)
	d := healthyRunDuration(t)
	n := startStaticPodNode(t)
	n.waitHealthy(t)
	pods := healthyRunPods(t)
	for i := 0; i < pods; i++ {
		if err := n.k.StaticPod("steady-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 5*time.Minute, fmt.Sprintf("%d static pods running besides hangwatch", pods),
		func() bool { return n.countRunningContainers() > pods }, harness.Every(time.Second),
		harness.Explaining(func() string { return fmt.Sprintf("%d containers running", n.countRunningContainers()) }))
	pid := hangwatchPID(t)
	stopLoad := harness.BurnCPU(t, runtime.NumCPU()/2)
	defer stopLoad()
	before := n.footprintSample(t, pid)
	churn := &podChurn{k: n.k}
	checks, peak, maxLastSeen := 0, before.rss, 0.0
	var raised string
	harness.Throughout(t, d, "the 4 conditions False on a healthy node", func() bool {
		if checks%3 == 0 {
			churn.step(t)
		}
		checks++
		for _, c := range []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock", "KubeletUnresponsive"} {
			if cond := nodeCond(t, n.cp, n.k.Node, c); cond == nil || cond.Status != corev1.ConditionFalse {
				raised = fmt.Sprintf("%s=%+v", c, cond)
				return false
			}
		}
		_, now := readFootprint(t, pid)
		peak = peak.max(now)
		if checks%15 == 0 { // as often as the PodMonitor scrapes: /metrics costs hangwatch CPU
			maxLastSeen = max(maxLastSeen, sumSeries(n.hangwatchMetrics(t), "hangwatch_pleg_last_seen_age_seconds"))
		}
		return true
	}, harness.Every(time.Second), harness.Explaining(func() string {
		return fmt.Sprintf("%s, %d pods created and %d deleted", raised, churn.created, churn.deleted)
	}))
	measurements.Record(t, "e2e_healthy_max_pleg_last_seen_age_seconds", maxLastSeen, "s")
	n.assertNotShared(t) // the kubelet has patched its status many times by now
	after := n.footprintSample(t, pid)
	reportFootprint(t, d, before, after, peak)
	t.Logf("%v healthy run: %d steady pods, %d churn pods created, %d deleted, %d checks of the 4 conditions: all False throughout", d, pods, churn.created, churn.deleted, checks)
	measurements.Duration(t, "e2e_healthy_run", d)
	measurements.Record(t, "e2e_healthy_steady_pods", float64(pods), "pods")
	measurements.Record(t, "e2e_healthy_churn_pods_created", float64(churn.created), "pods")
	measurements.Record(t, "e2e_healthy_churn_pods_deleted", float64(churn.deleted), "pods")
	measurements.Record(t, "e2e_healthy_condition_checks", float64(checks), "checks", "the 4 conditions, all False throughout")
}

// podChurn creates a static pod each step and, past the first three,
// deletes the oldest.
type podChurn struct {
	k                *harness.Kubelet
	created, deleted int
}

func (c *podChurn) step(t *testing.T) {
	t.Helper()
	if err := c.k.StaticPod("churn-" + strconv.Itoa(c.created)); err != nil {
		t.Fatal(err)
	}
	c.created++
	if c.created > 3 {
		if err := c.k.RemoveStaticPod("churn-" + strconv.Itoa(c.deleted)); err != nil {
			t.Fatal(err)
		}
		c.deleted++
	}
}

type footprint struct {
	at             time.Time
	cpu            time.Duration
	rss            rss
	hangwatchCalls float64 // CRI calls hangwatch sent (probes plus at least 2 per emulated relist)
	kubeletCalls   float64 // kubelet_runtime_operations_total, all operations
	hangwatchText  string  // hangwatch's /metrics, for the breakdown of its calls
}

func (n staticPodNode) footprintSample(t *testing.T, pid int) footprint {
	t.Helper()
	hw := n.hangwatchMetrics(t)
	kl := httpGet(t, n.k.ReadOnlyMetricsURL())
	cpu, mem := readFootprint(t, pid)
	return footprint{at: time.Now(), cpu: cpu, rss: mem,
		hangwatchCalls: sumSeries(hw, "hangwatch_cri_probes_total") + 2*sumSeries(hw, "hangwatch_pleg_emulated_relists_total"),
		kubeletCalls:   sumSeries(kl, "kubelet_runtime_operations_total"), hangwatchText: hw}
}

func reportFootprint(t *testing.T, d time.Duration, a, b footprint, peak rss) {
	t.Helper()
	secs := b.at.Sub(a.at).Seconds()
	cpu := (b.cpu - a.cpu).Seconds() / secs
	hwPerMin := (b.hangwatchCalls - a.hangwatchCalls) / secs * 60
	klPerMin := (b.kubeletCalls - a.kubeletCalls) / secs * 60
	measurements.Record(t, "e2e_footprint_rss_steady_mib", float64(b.rss.totalKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_peak_mib", float64(peak.totalKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_anon_steady_mib", float64(b.rss.anonKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_rss_anon_peak_mib", float64(peak.anonKiB)/1024, "MiB")
	measurements.Record(t, "e2e_footprint_cpu_percent_of_a_core", cpu*100, "% of a core")
	measurements.Record(t, "e2e_cri_calls_per_min_hangwatch", hwPerMin, "calls/min")
	measurements.Record(t, "e2e_cri_calls_per_min_kubelet", klPerMin, "calls/min")
	if klPerMin > 0 {
		measurements.Record(t, "e2e_cri_calls_hangwatch_share_percent", hwPerMin/klPerMin*100, "%")
	}
	for _, name := range []string{"hangwatch_cri_probes_total", "hangwatch_pleg_emulated_relists_total", "hangwatch_kubelet_metrics_scrapes_total"} {
		t.Logf("over the run, %s grew by %s", name, seriesGrowth(a.hangwatchText, b.hangwatchText, name))
	}
	if float64(peak.totalKiB)/1024 > 20 {
		t.Logf("peak RSS %.1f MiB is over the 20 MiB goal (anonymous memory %.1f MiB; the rest is the binary's mapped pages)",
			float64(peak.totalKiB)/1024, float64(peak.anonKiB)/1024)
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

// rss is a process's resident memory: all of it (VmRSS), and the part
// that is its own (RssAnon: heap, stacks), not pages of its binary.
type rss struct{ totalKiB, anonKiB uint64 }

func (r rss) max(o rss) rss { return rss{max(r.totalKiB, o.totalKiB), max(r.anonKiB, o.anonKiB)} }

// readFootprint reads pid's CPU time and resident memory.
func readFootprint(t *testing.T, pid int) (time.Duration, rss) {
	t.Helper()
	cpu, mem := harness.ProcUsage(t, pid)
	return cpu, rss{totalKiB: mem.RSS, anonKiB: mem.Anon}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback test request
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// seriesOf reads the samples of one metric from Prometheus text, by the
// sample's name and labels as written.
func seriesOf(text, name string) map[string]float64 {
	series := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"{")) {
			continue
		}
		series[f[0]], _ = strconv.ParseFloat(f[len(f)-1], 64)
	}
	return series
}

func sumSeries(text, name string) float64 {
	sum := 0.0
	for _, v := range seriesOf(text, name) {
		sum += v
	}
	return sum
}

// seriesGrowth lists how much each series of a counter grew between two
// scrapes, as "{labels} n" pairs.
func seriesGrowth(before, after, name string) string {
	was := seriesOf(before, name)
	var out []string
	for s, v := range seriesOf(after, name) {
		if v != was[s] {
			out = append(out, fmt.Sprintf("%s %.0f", strings.TrimPrefix(s, name), v-was[s]))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// countRunningContainers counts the containers containerd runs, -1 when
// it does not answer.
func (n staticPodNode) countRunningContainers() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := n.c.Runtime().ListContainers(ctx, runningContainers())
	if err != nil {
		return -1
	}
	return len(list.Containers)
}

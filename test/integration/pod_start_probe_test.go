package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/podstarts"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestPodStartProbeSeesAHungSandboxWithNoPodStarting: the opt-in probe on
// a node where no pod starts (a real kubelet, which stops sandboxes it
// does not know, through the fault proxy to containerd; hangwatch's calls
// through the proxy too), every 100ms: 100 probes leave no sandbox of the
// probe's behind. Then the proxy holds RunPodSandbox: PodStartStuck True
// (ProbeSandboxStuck) within 60s of the probe's start, RuntimeHung False;
// let go, the sandbox the held call made is removed and PodStartStuck is
// False.
func TestPodStartProbeSeesAHungSandboxWithNoPodStarting(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c := containerd.StartT(t, 0, 0)
	n := startPodStartNodeWith(t, c, "hw-probe", true,
		"--pod-start-probe", "--pod-start-probe-period", "100ms", "--pod-start-probe-sandbox-image", harness.PauseImage)
	// A cold test run, its compiles beside the tests on 2 cores, had not
	// made 100 in 3 minutes.
	harness.Eventually(t, 6*time.Minute, "100 probes", func() bool { return probes(n.d) >= 100 },
		harness.UnlessExited(n.d), harness.Explaining(func() string { return probeResults(n.d) }))
	before := n.proxy.Held("RunPodSandbox")
	release := n.proxy.Inject(criproxy.Fault{Method: "RunPodSandbox"})
	defer release()
	harness.Eventually(t, 30*time.Second, "a probe held", func() bool { return n.proxy.Held("RunPodSandbox") > before })
	held := time.Now()
	if left := probeSandboxes(t, c); left != 0 {
		t.Errorf("%d sandboxes of the probe's left after %v probes", left, probes(n.d))
	}
	harness.Eventually(t, 2*time.Minute, "PodStartStuck True (ProbeSandboxStuck)", func() bool {
		s, r := n.stuck(t)
		return s == "True" && r == "ProbeSandboxStuck"
	}, harness.UnlessExited(n.d))
	raised := time.Since(held)
	harness.Measure(t, "pod_start_stuck_after_held_probe", raised)
	if raised > time.Minute {
		t.Errorf("PodStartStuck %v after the probe's start; want within 60s", raised)
	}
	if s, _, _ := n.d.Condition(t, "RuntimeHung"); s != "False" {
		t.Errorf("RuntimeHung %s with only RunPodSandbox held: the reads answer", s)
	}
	release()
	harness.Eventually(t, time.Minute, "PodStartStuck False once the probe's sandbox started", func() bool { s, _ := n.stuck(t); return s == "False" },
		harness.UnlessExited(n.d))
	harness.Eventually(t, 30*time.Second, "the held probe's sandbox removed", func() bool { return probeSandboxes(t, c) == 0 })
}

// TestPodStartProbeOnThePodNetworkSeesAHungCNIAdd: the opt-in probe on
// the pod network (--pod-start-probe-pod-network), beside a real kubelet on
// a containerd whose CNI plugin's ADD waits: PodStartStuck True
// (ProbeSandboxStuck) within 60s of the probe's start, RuntimeHung False;
// the ADD let go, the probe's sandbox is removed (its DEL run) and
// PodStartStuck is False.
func TestPodStartProbeOnThePodNetworkSeesAHungCNIAdd(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c, starts := containerd.StartHangingT(t, true)
	started := time.Now()
	n := startPodStartNodeWith(t, c, "hw-probe-net", false, "--pod-start-probe", "--pod-start-probe-pod-network",
		"--pod-start-probe-period", "1s", "--pod-start-probe-sandbox-image", harness.PauseImage)
	harness.Eventually(t, 2*time.Minute, "PodStartStuck True (ProbeSandboxStuck)", func() bool {
		s, r := n.stuck(t)
		return s == "True" && r == "ProbeSandboxStuck"
	}, harness.UnlessExited(n.d))
	t.Logf("ProbeSandboxStuck %v after hangwatch started (the first probe a second in)", time.Since(started).Round(100*time.Millisecond))
	if s, _, _ := n.d.Condition(t, "RuntimeHung"); s != "False" {
		t.Errorf("RuntimeHung %s with only the CNI plugin's ADD waiting: the reads answer", s)
	}
	starts.ReleaseNetwork()
	harness.Eventually(t, time.Minute, "PodStartStuck False once the probe's sandbox started", func() bool { s, _ := n.stuck(t); return s == "False" },
		harness.UnlessExited(n.d))
	harness.Eventually(t, 30*time.Second, "the probe's sandbox removed", func() bool { return probeSandboxes(t, c) == 0 })
}

// probes is how many probes made a sandbox, from hangwatch's /metrics.
func probes(d *hangwatch.Daemon) float64 {
	text, err := d.Metrics()
	if err != nil {
		return -1
	}
	return harness.MetricValue(text, `hangwatch_pod_start_probes_total{result="ok"}`)
}

// probeResults is the probe counter's lines of hangwatch's /metrics, for a
// failure.
func probeResults(d *hangwatch.Daemon) string {
	text, err := d.Metrics()
	if err != nil {
		return fmt.Sprintf("/metrics: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "hangwatch_pod_start_probe") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// probeSandboxes counts the probe's sandboxes in containerd, asked directly.
func probeSandboxes(t *testing.T, c *containerd.Containerd) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Runtime().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podstarts.ProbeLabel: "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetItems())
}

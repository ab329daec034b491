package integration

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/crio"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// crioRestarter starts CRI-O again on the same binaries and state.
type crioRestarter struct{ *crio.CRIO }

func (c crioRestarter) start(ctx context.Context) error { return c.StartRuntime(ctx) }
func (c crioRestarter) String() string                  { return "CRI-O " + c.Bin.Version }

// startCRIO starts the pinned CRI-O with pods × perPod running containers
// and stops it when the test ends.
func startCRIO(t *testing.T, pods, perPod int) *crio.CRIO {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := crio.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, pods, perPod); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCRIO runs against a real CRI-O (crio, pinns and runc built from
// pinned sources, Debian's conmon) what the containerd tests run:
// diag's report, the relist emulation's PLEGUnhealthy, RuntimeHung raised
// by a freeze and cleared by a thaw,
// and `hangwatch run` through a graceful stop and a SIGKILL, each followed
// by a start on the same state, with the containers running on.
func TestCRIO(t *testing.T) {
	harness.Parallel(t)
	const pods, perPod = 3, 2
	c := startCRIO(t, pods, perPod)
	t.Run("diag", func(t *testing.T) { checkCRIODiag(t, c, pods, pods*perPod) })
	const period, timeout = time.Second, time.Second
	d := hangwatch.StartDaemon(t, c.Endpoint, "--period", period.String(), "--max-period", "2s", "-t", timeout.String())
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	// no kubelet here: PLEGUnhealthy comes from hangwatch's own relist of
	// CRI-O's sandboxes and containers
	harness.Eventually(t, 30*time.Second, "PLEGUnhealthy False from the relist emulation", func() bool {
		s, r, _ := d.Condition(t, "PLEGUnhealthy")
		return s == "False" && r == "RelistHealthy"
	}, harness.UnlessExited(d))
	t.Run("freeze", func(t *testing.T) {
		thaw := harness.Freeze(t, c)
		frozeAt := time.Now()
		harness.Eventually(t, period+timeout+hangwatch.GenerousSlack+10*time.Second, "RuntimeHung True", func() bool { return d.RuntimeHung(t) == "True" }, harness.UnlessExited(d))
		harness.Measure(t, "crio_runtimehung_raised_after_freeze", time.Since(frozeAt))
		_, reason, _ := d.Condition(t, "RuntimeHung")
		t.Logf("CRI-O %s frozen: RuntimeHung True, %s, after %v", c.Bin.Version, reason, time.Since(frozeAt).Round(time.Millisecond))
		thaw()
		thawedAt := time.Now()
		harness.Eventually(t, time.Minute, "RuntimeHung False after the thaw", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
		harness.Measure(t, "crio_runtimehung_cleared_after_thaw", time.Since(thawedAt))
	})
	before := runningIDs(t, c.Runtime())
	for _, rc := range restartCases[:2] {
		t.Run(rc.name, func(t *testing.T) {
			unreachable, recovered := restartRuntime(t, crioRestarter{c}, rc, func() (string, string) { s, r, _ := d.Condition(t, "RuntimeHung"); return s, r })
			harness.Measure(t, "crio_restart_"+metricName(rc.name)+"_unreachable_after_stop", unreachable)
			harness.Measure(t, "crio_restart_"+metricName(rc.name)+"_false_after_socket_answers", recovered)
			if recovered > 2*period+hangwatch.GenerousSlack {
				t.Errorf("RuntimeHung False %v after the socket answered, want within two periods (%v) plus slack", recovered, 2*period)
			}
			after := runningIDs(t, c.Runtime())
			for id := range before {
				if !after[id] {
					t.Errorf("container %s is not running after the restart (running: %v)", id, after)
				}
			}
		})
	}
}

// checkCRIODiag: diag names CRI-O and its version, finds every pod and
// container, and judges it Healthy with every call answered.
func checkCRIODiag(t *testing.T, c *crio.CRIO, sandboxes, containers int) {
	t.Helper()
	r, code, _ := runDiag(t, c.Endpoint, "--samples", "3")
	if code != 0 || r.Verdict != "Healthy" {
		t.Fatalf("exit %d verdict %s (%v), want 0 Healthy", code, r.Verdict, r.Reasons)
	}
	if r.Runtime.Name != "cri-o" || r.Runtime.Version != c.Bin.Version {
		t.Errorf("runtime %+v, want cri-o %s", r.Runtime, c.Bin.Version)
	}
	if r.Sandboxes != sandboxes || r.Containers != containers {
		t.Errorf("counts = %d sandboxes, %d containers; want %d, %d", r.Sandboxes, r.Containers, sandboxes, containers)
	}
	for _, call := range r.Calls {
		if call.Errors != 0 || call.Timeouts != 0 {
			t.Errorf("%+v: want no errors or timeouts", call)
		}
	}
	for _, cond := range r.RuntimeConditions {
		if !cond.Status {
			t.Errorf("runtime condition %+v is false", cond)
		}
	}
	t.Logf("diag on CRI-O %s: %s, list streaming %s, %d calls", c.Bin.Version, r.Verdict, r.ListStreaming, len(r.Calls))
}

// runningIDs are the IDs of the runtime's running containers.
func runningIDs(t *testing.T, rt runtimeapi.RuntimeServiceClient) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := rt.ListContainers(ctx, hangwatch.RunningContainers())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range list.Containers {
		ids[c.Id] = true
	}
	return ids
}

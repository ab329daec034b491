package scenarios

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// PodChurn creates a static pod each step and, past the first three,
// deletes the oldest.
type PodChurn struct {
	K                *kubelet.Kubelet
	Created, Deleted int
}

// Step is one step of the churn.
func (c *PodChurn) Step(t *testing.T) {
	t.Helper()
	if err := c.K.StaticPod("churn-" + strconv.Itoa(c.Created)); err != nil {
		t.Fatal(err)
	}
	c.Created++
	if c.Created > 3 {
		if err := c.K.RemoveStaticPod("churn-" + strconv.Itoa(c.Deleted)); err != nil {
			t.Fatal(err)
		}
		c.Deleted++
	}
}

// PodChurnStaysPLEGHealthy is TestHealthyNodeWithPodChurnStaysPLEGHealthy's
// scenario: a real kubelet, hangwatch beside it, and a pod created or
// deleted every 3 s for churn, PLEGUnhealthy False throughout. The
// correctness suite churns for a minute, the benchmarks for 10.
func PodChurnStaysPLEGHealthy(t *testing.T, churn time.Duration) {
	t.Helper()
	n := hangwatch.StartKubeletNode(t)
	d := hangwatch.PLEGDaemon(t, n)
	harness.Eventually(t, 60*time.Second, "PLEGUnhealthy=False", func() bool { s, _, _ := d.Condition(t, "PLEGUnhealthy"); return s == "False" }, harness.UnlessExited(d))
	pods, checks := &PodChurn{K: n.K}, 0
	nextPod := time.Now()
	var s, reason, msg string
	harness.Throughout(t, churn, "PLEGUnhealthy=False on a healthy node with pod churn", func() bool {
		if time.Now().After(nextPod) {
			pods.Step(t)
			nextPod = time.Now().Add(3 * time.Second)
		}
		s, reason, msg = d.Condition(t, "PLEGUnhealthy")
		checks++
		return s == "False"
	}, harness.Every(500*time.Millisecond), harness.UnlessExited(d), harness.Explaining(func() string {
		return fmt.Sprintf("PLEGUnhealthy=%s (%s: %s) after %d pods created, %d deleted", s, reason, msg, pods.Created, pods.Deleted)
	}))
	metrics, _ := d.Get("/metrics")
	t.Logf("%v of churn: %d pods created, %d deleted, %d checks, PLEGUnhealthy False throughout; emulated relists ok %v, last %.4fs; scrapes ok %v; kubelet relist p99 %v s",
		churn, pods.Created, pods.Deleted, checks, harness.MetricValue(metrics, `hangwatch_pleg_emulated_relists_total{result="ok"}`),
		harness.MetricValue(metrics, "hangwatch_pleg_emulated_relist_seconds"), harness.MetricValue(metrics, `hangwatch_kubelet_metrics_scrapes_total{result="ok"}`),
		harness.MetricValue(metrics, "hangwatch_pleg_relist_p99_seconds"))
}

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// APIRequests sums the API server's apiserver_request_total over the
// series of one verb, resource and subresource (all codes).
func APIRequests(t *testing.T, cp *harness.ControlPlane, verb, resource, subresource string) int {
	t.Helper()
	text, err := cp.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, s := range harness.Scrape(text) {
		if s.Name == "apiserver_request_total" && s.Labels["verb"] == verb && s.Labels["resource"] == resource &&
			s.Labels["subresource"] == subresource {
			total += s.Value
		}
	}
	return int(total)
}

type WriteCount struct{ Patches, Events int }

func Writes(t *testing.T, cp *harness.ControlPlane) WriteCount {
	return WriteCount{Patches: APIRequests(t, cp, "PATCH", "nodes", "status"),
		Events: APIRequests(t, cp, "POST", "events", "") + APIRequests(t, cp, "PATCH", "events", "")}
}

// WriteBudget is TestWriteBudget's scenario: it counts, at the API
// server, what hangwatch writes in steady for heartbeat (one status patch
// per heartbeat however often it probes), then for a transition (one patch
// and one Event). The correctness suite runs 25 s at a 10 s heartbeat, the
// benchmarks 5 minutes at 30 s.
func WriteBudget(t *testing.T, steady, heartbeat time.Duration) {
	t.Helper()
	c, cp := hangwatch.OwnContainerd(t), harness.StartControlPlaneT(t) // its own: the test counts requests at the API server
	node := hangwatch.UniqueNode("hw-writes")
	kc := hangwatch.CreateNode(t, cp, node)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", "1s", "-t", "1s",
		"--max-period", "2s", "--status-heartbeat-period", heartbeat.String())...)
	for _, cond := range []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock"} { // the first patches all landed
		hangwatch.WaitNode(t, cp, d, 30*time.Second, node, cond, hangwatch.CondStatus(corev1.ConditionFalse))
	}
	from := time.Now()
	before := Writes(t, cp)
	start := time.Now()
	harness.Eventually(t, steady+time.Minute, "the steady window", func() bool { return time.Since(start) >= steady }, harness.UnlessExited(d))
	after, afterAt := Writes(t, cp), time.Now()
	// the patches counted are those between the two reads: on a loaded
	// machine the reads and the wait take longer than steady, and each
	// heartbeat that fell due in the longer window is one more patch
	most := int(afterAt.Sub(from)/heartbeat) + 1
	patches := after.Patches - before.Patches
	cycles := int(steady / time.Second)
	window := fmt.Sprintf("in %v, heartbeat %v, %d probe cycles", steady, heartbeat, cycles)
	measurements.Record(t, "steady_status_patches", float64(patches), "patches", window)
	measurements.Record(t, "steady_events", float64(after.Events-before.Events), "events", window)
	measurements.Record(t, "steady_writes_per_hour_at_5m_heartbeat", float64(patches)/steady.Hours()*heartbeat.Hours()/(5*time.Minute).Hours(), "writes/h")
	if want := int(steady / heartbeat); patches < want-1 || patches > most || after.Events != before.Events {
		t.Errorf("steady state: %d patches and %d events in %v (%v between the reads), want %d to %d heartbeat patches and no event",
			patches, after.Events-before.Events, steady, afterAt.Sub(from).Round(time.Millisecond), want-1, most)
	}

	thaw := harness.Freeze(t, c)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue))
	harness.Eventually(t, 30*time.Second, "the transition's Event", func() bool { return Writes(t, cp).Events > after.Events }, harness.UnlessExited(d))
	raise, raiseAt := Writes(t, cp), time.Now()
	thaw()
	hangwatch.WaitNode(t, cp, d, 60*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	harness.Eventually(t, 30*time.Second, "the clear's Event", func() bool { return Writes(t, cp).Events > raise.Events }, harness.UnlessExited(d))
	clear := Writes(t, cp)
	measurements.Record(t, "transition_raise_patches", float64(raise.Patches-after.Patches), "patches")
	measurements.Record(t, "transition_raise_events", float64(raise.Events-after.Events), "events")
	measurements.Record(t, "transition_clear_patches", float64(clear.Patches-raise.Patches), "patches")
	measurements.Record(t, "transition_clear_events", float64(clear.Events-raise.Events), "events")
	// the raise's window is as long as the freeze took to be seen and its
	// Event read, longer on a loaded machine: each heartbeat that fell
	// due in it is one more patch, and no more
	heartbeats := int(raiseAt.Sub(afterAt)/heartbeat) + 1
	if n := raise.Patches - after.Patches; n < 1 || n > 1+heartbeats {
		t.Errorf("raising took %d patches in %v, want 1 and at most %d heartbeats", n, raiseAt.Sub(afterAt).Round(time.Second), heartbeats)
	}
}

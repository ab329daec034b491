package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// apiRequests sums the API server's apiserver_request_total over the
// series of one verb, resource and subresource (all codes).
func apiRequests(t *testing.T, cp *harness.ControlPlane, verb, resource, subresource string) int {
	t.Helper()
	text, err := cp.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^apiserver_request_total\{([^}]*)\} (\S+)$`)
	total := 0.0
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		labels := m[1]
		if strings.Contains(labels, `verb="`+verb+`"`) && strings.Contains(labels, `resource="`+resource+`"`) &&
			strings.Contains(labels, `subresource="`+subresource+`"`) {
			v, _ := strconv.ParseFloat(m[2], 64)
			total += v
		}
	}
	return int(total)
}

type writeCount struct{ patches, events int }

func writes(t *testing.T, cp *harness.ControlPlane) writeCount {
	return writeCount{patches: apiRequests(t, cp, "PATCH", "nodes", "status"),
		events: apiRequests(t, cp, "POST", "events", "") + apiRequests(t, cp, "PATCH", "events", "")}
}

// TestWriteBudget counts, at the API server, what hangwatch writes: in a
// steady state one status patch per heartbeat however often it probes (its
// messages do not tick), and one patch and one Event per transition. The
// benchmarks (go test -tags bench) run it for 5 minutes.
func TestWriteBudget(t *testing.T) {
	harness.Parallel(t)
	c, cp := ownContainerd(t), harness.StartControlPlaneT(t) // its own: the test counts requests at the API server
	steady, heartbeat := 25*time.Second, 10*time.Second
	if harness.InSuite(harness.SuiteBench) {
		steady, heartbeat = 5*time.Minute, 30*time.Second
	}
	node := uniqueNode("hw-writes")
	kc := createNode(t, cp, node)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--config", noLeaseConfig(t), "--period", "1s", "-t", "1s",
		"--max-period", "2s", "--status-heartbeat-period", heartbeat.String())...)
	for _, cond := range []string{"RuntimeHung", "PLEGUnhealthy", "KernelDeadlock"} { // the first patches all landed
		waitNode(t, cp, d, 30*time.Second, node, cond, status(corev1.ConditionFalse))
	}
	before := writes(t, cp)
	start := time.Now()
	harness.Eventually(t, steady+time.Minute, "the steady window", func() bool { return time.Since(start) >= steady }, harness.UnlessExited(d))
	after := writes(t, cp)
	patches := after.patches - before.patches
	cycles := int(steady / time.Second)
	window := fmt.Sprintf("in %v, heartbeat %v, %d probe cycles", steady, heartbeat, cycles)
	measurements.Record(t, "steady_status_patches", float64(patches), "patches", window)
	measurements.Record(t, "steady_events", float64(after.events-before.events), "events", window)
	measurements.Record(t, "steady_writes_per_hour_at_5m_heartbeat", float64(patches)/steady.Hours()*heartbeat.Hours()/(5*time.Minute).Hours(), "writes/h")
	if want := int(steady / heartbeat); patches < want-1 || patches > want+1 || after.events != before.events {
		t.Errorf("steady state: %d patches and %d events in %v, want %d±1 heartbeat patches and no event",
			patches, after.events-before.events, steady, want)
	}

	thaw := freeze(t, c)
	waitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionTrue))
	harness.Eventually(t, 30*time.Second, "the transition's Event", func() bool { return writes(t, cp).events > after.events }, harness.UnlessExited(d))
	raise := writes(t, cp)
	thaw()
	waitNode(t, cp, d, 60*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))
	harness.Eventually(t, 30*time.Second, "the clear's Event", func() bool { return writes(t, cp).events > raise.events }, harness.UnlessExited(d))
	clear := writes(t, cp)
	measurements.Record(t, "transition_raise_patches", float64(raise.patches-after.patches), "patches")
	measurements.Record(t, "transition_raise_events", float64(raise.events-after.events), "events")
	measurements.Record(t, "transition_clear_patches", float64(clear.patches-raise.patches), "patches")
	measurements.Record(t, "transition_clear_events", float64(clear.events-raise.events), "events")
	if n := raise.patches - after.patches; n < 1 || n > 2 {
		t.Errorf("raising took %d patches, want 1 (2 if a heartbeat fell due)", n)
	}
}

package integration

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestRestartCarriesKernelDeadlockOnAndClearsIt runs against the real API
// server and the real /dev/kmsg. A hung-task line raises KernelDeadlock on
// the Node; hangwatch restarts with a lookback that no longer holds the
// line, so only the Node remembers it. The restarted hangwatch carries the
// condition on without a second Warning Event, and clears it once its
// rule's quiet window (clearAfter, 20 s here) has passed since the restart.
func TestRestartCarriesKernelDeadlockOnAndClearsIt(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	node := hangwatch.UniqueNode("hw-restore")
	kc := hangwatch.CreateNode(t, cp, node)
	pid := 1000000 + rand.Intn(8000000)
	const quiet = 20 * time.Second
	args := hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", "1s", "-t", "1s",
		"--kernel-rules", quietRulesFile(t, pid, quiet))
	d := hangwatch.StartDaemon(t, c.Endpoint, args...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KernelDeadlock", hangwatch.CondStatus(corev1.ConditionFalse))

	writeKmsg(t, fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid))
	raised := hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KernelDeadlock", hangwatch.CondStatus(corev1.ConditionTrue))
	harness.Eventually(t, 30*time.Second, "the Warning Event", func() bool { return len(deadlockWarnings(t, cp, node)) == 1 }, harness.UnlessExited(d))
	d.Stop(t)

	// --kernel-lookback 0s (nodeArgs): the restarted hangwatch does not read
	// the line again; only the Node says KernelDeadlock is True.
	restarted := hangwatch.StartDaemon(t, c.Endpoint, args...)
	restartedAt := time.Now()
	harness.Eventually(t, 30*time.Second, "KernelDeadlock True restored from the Node", func() bool {
		st, _, _ := restarted.Condition(t, "KernelDeadlock")
		return st == "True"
	}, harness.UnlessExited(restarted))
	hangwatch.WaitNode(t, cp, restarted, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	if k := hangwatch.NodeCond(t, cp, node, "KernelDeadlock"); k == nil || k.Status != corev1.ConditionTrue ||
		!k.LastTransitionTime.Equal(&raised.LastTransitionTime) {
		t.Errorf("KernelDeadlock after the restart: %+v, want True since %v", k, raised.LastTransitionTime)
	}
	hangwatch.WaitNode(t, cp, restarted, quiet+30*time.Second, node, "KernelDeadlock", hangwatch.CondStatus(corev1.ConditionFalse))
	cleared := time.Since(restartedAt)
	harness.Measure(t, "kernel_deadlock_restored_cleared_after_restart", cleared)
	if cleared < quiet-2*time.Second {
		t.Errorf("the restored KernelDeadlock cleared %v after the restart, before its %v quiet window", cleared, quiet)
	}
	harness.Eventually(t, 30*time.Second, "the Normal Event for the clear", func() bool {
		return harness.HasEvent(harness.NodeEvents(t, cp, node), corev1.EventTypeNormal, "KernelHasNoDeadlock")
	}, harness.UnlessExited(restarted))
	if w := deadlockWarnings(t, cp, node); len(w) != 1 || w[0].Count > 1 {
		t.Errorf("Warning Events for KernelDeadlock after the restart: %d objects (first counted %d), want the one from before it",
			len(w), countOf(w))
	}
}

// quietRulesFile is a kernel rules file with one KernelDeadlock rule for
// this test's line alone (its pid), cleared after quiet without a match.
// It opts in to facility user: the test writes the line to /dev/kmsg
// (writeKmsg).
func quietRulesFile(t *testing.T, pid int, quiet time.Duration) string {
	t.Helper()
	body := fmt.Sprintf(`{"plugin": "kmsg", "source": "hangwatch-kernel", "facilities": ["kern", "user"],
  "conditions": [{"type": "KernelDeadlock", "reason": "KernelHasNoDeadlock", "message": "kernel has no deadlock"}],
  "rules": [{"name": "runtime-task-blocked", "type": "permanent", "condition": "KernelDeadlock",
    "reason": "ContainerRuntimeTaskBlocked", "pattern": "task containerd:%d blocked for more than \\d+ seconds\\.",
    "clearAfter": "%s"}]}`, pid, quiet)
	path := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func deadlockWarnings(t *testing.T, cp *harness.ControlPlane, node string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for _, e := range harness.NodeEvents(t, cp, node) {
		if e.Type == corev1.EventTypeWarning && e.Reason == "ContainerRuntimeTaskBlocked" {
			out = append(out, e)
		}
	}
	return out
}

func countOf(events []corev1.Event) int32 {
	if len(events) == 0 {
		return 0
	}
	return events[0].Count
}

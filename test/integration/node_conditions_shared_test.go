package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/nodestatus"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// createTrackedNode is createNode for a Node whose field managers the API
// server records. The harness's API server starts recording an object's
// managedFields only at its first server-side apply (neither a Create nor
// an apply that creates starts it), while a cluster's Nodes carry them
// from their creation; a label applied once starts it here.
func createTrackedNode(t *testing.T, cp *harness.ControlPlane, name string) string {
	t.Helper()
	kc := hangwatch.CreateNode(t, cp, name)
	body := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `","labels":{"hangwatch.io/test":"tracked"}}}`
	n, err := cp.Admin.CoreV1().Nodes().Patch(context.Background(), name, types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.ManagedFields) == 0 {
		t.Fatal("the API server records no field managers for the Node even after an apply")
	}
	return kc
}

// TestSharedAndLeftBehindConditions runs against the real API server's
// managedFields: node-problem-detector's KernelDeadlock is left to it and
// reported once (log, Event, metric) unless --overwrite-shared-conditions
// names it, and a type an older hangwatch wrote and no longer owns is
// removed on start.
func TestSharedAndLeftBehindConditions(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	node := hangwatch.UniqueNode("hw-shared")
	kc := createTrackedNode(t, cp, node)
	now := metav1.Now()
	write := func(manager string, cond corev1.NodeCondition) {
		t.Helper()
		cond.LastHeartbeatTime, cond.LastTransitionTime = now, now
		body, err := nodestatus.StatusPatch([]corev1.NodeCondition{cond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cp.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, body,
			metav1.PatchOptions{FieldManager: manager}, "status"); err != nil {
			t.Fatalf("patch as %s: %v", manager, err)
		}
	}
	write("node-problem-detector", corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionTrue,
		Reason: "DockerHung", Message: "written by node-problem-detector"})
	write(nodestatus.FieldManager, corev1.NodeCondition{Type: "FrequentContainerdRestart", Status: corev1.ConditionTrue,
		Reason: "FrequentContainerdRestart", Message: "left by an older config"})

	args := hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", "1s", "-t", "1s")
	d := hangwatch.StartDaemon(t, c.Endpoint, args...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	harness.Eventually(t, 30*time.Second, "FrequentContainerdRestart removed", func() bool {
		return hangwatch.NodeCond(t, cp, node, "FrequentContainerdRestart") == nil
	}, harness.UnlessExited(d))
	if k := hangwatch.NodeCond(t, cp, node, "KernelDeadlock"); k == nil || k.Status != corev1.ConditionTrue || k.Reason != "DockerHung" {
		t.Errorf("KernelDeadlock %+v: want node-problem-detector's, untouched", k)
	}
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := harness.MetricValue(text, `hangwatch_node_condition_shared{condition="KernelDeadlock",manager="node-problem-detector"}`); v != 1 {
		t.Errorf("hangwatch_node_condition_shared for KernelDeadlock = %v, want 1", v)
	}
	if v := harness.MetricValue(text, `hangwatch_node_condition_shared{condition="RuntimeHung",manager="node-problem-detector"}`); v > 0 {
		t.Errorf("RuntimeHung reported shared: %v", v)
	}
	harness.Eventually(t, 30*time.Second, "the ConditionSharedWithAnotherWriter Event", func() bool {
		for _, e := range harness.NodeEvents(t, cp, node) {
			if e.Reason == "ConditionSharedWithAnotherWriter" && strings.Contains(e.Message, "KernelDeadlock is also written by node-problem-detector") {
				return e.Count == 1
			}
		}
		return false
	}, harness.UnlessExited(d))
	d.Stop(t)

	over := hangwatch.StartDaemon(t, c.Endpoint, append(args, "--overwrite-shared-conditions", "KernelDeadlock")...)
	hangwatch.WaitNode(t, cp, over, 30*time.Second, node, "KernelDeadlock", hangwatch.CondStatus(corev1.ConditionFalse))
}

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/nodestatus"
)

func TestFrozenRuntimeReachesTheNode(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	const period, timeout = time.Second, time.Second
	node := hangwatch.UniqueNode("hw-freeze")
	kc := hangwatch.CreateNode(t, cp, node)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", period.String(),
		"-t", timeout.String(), "--max-period", "2s")...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	if c := hangwatch.NodeCond(t, cp, node, "KubeletUnresponsive"); c != nil {
		t.Errorf("a condition the config file disabled was written: %+v", c)
	}

	thaw := harness.Freeze(t, c)
	frozeAt := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True in /conditions", func() bool { return d.RuntimeHung(t) == "True" }, harness.UnlessExited(d))
	decided := time.Now()
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue))
	onNode := time.Now()
	harness.Measure(t, "node_runtimehung_true_after_freeze", onNode.Sub(frozeAt))
	harness.Measure(t, "node_condition_written_after_change", onNode.Sub(decided))
	if limit := period + timeout + time.Second; onNode.Sub(frozeAt) > limit+hangwatch.GenerousSlack {
		t.Errorf("RuntimeHung reached the Node %v after the freeze, want within %v (+slack)", onNode.Sub(frozeAt), limit)
	}
	if onNode.Sub(decided) > time.Second {
		t.Errorf("the Node got the change %v after hangwatch made it, want under a second", onNode.Sub(decided))
	}
	harness.Eventually(t, 30*time.Second, "a Warning Event", func() bool {
		for _, e := range harness.NodeEvents(t, cp, node) {
			if e.Type == corev1.EventTypeWarning && strings.HasSuffix(e.Reason, "Hung") || e.Reason == "RuntimeNotResponding" {
				return true
			}
		}
		return false
	}, harness.UnlessExited(d))
	jsonpath := `jsonpath={.status.conditions[?(@.type=="RuntimeHung")].status}`
	if got := cp.Kubectl(t, "get", "node", node, "-o", jsonpath); got != "True" {
		t.Errorf("kubectl sees RuntimeHung %q, want True", got)
	}

	thaw()
	thawedAt := time.Now()
	hangwatch.WaitNode(t, cp, d, 60*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	harness.Measure(t, "node_runtimehung_false_after_thaw", time.Since(thawedAt))
	harness.Eventually(t, 30*time.Second, "a Normal Event for the clear", func() bool {
		return harness.HasEvent(harness.NodeEvents(t, cp, node), corev1.EventTypeNormal, "RuntimeResponsive")
	}, harness.UnlessExited(d))
	events := cp.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name="+node)
	if !strings.Contains(events, "RuntimeResponsive") || !strings.Contains(events, "Warning") {
		t.Errorf("kubectl get events does not list hangwatch's events:\n%s", events)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range hangwatch.KubeletConditions() {
		if got := hangwatch.FindCond(n, want.Type); got == nil || !equality.Semantic.DeepEqual(*got, want) {
			t.Errorf("the kubelet's %s changed: %+v, want %+v", want.Type, got, want)
		}
	}
}

func TestNodeIdentityMayWriteOnlyItsOwnNode(t *testing.T) {
	harness.Parallel(t)
	cp := hangwatch.SharedControlPlane(t)
	self, other := hangwatch.UniqueNode("hw-self"), hangwatch.UniqueNode("hw-other")
	kc := hangwatch.CreateNode(t, cp, self)
	hangwatch.CreateNode(t, cp, other)
	client := harness.ClientFor(t, kc)
	body, err := nodestatus.StatusPatch([]corev1.NodeCondition{{Type: "RuntimeHung", Status: corev1.ConditionFalse, Reason: "RuntimeResponsive"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Patch(ctx, self, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patching its own node: %v", err)
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, other, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is not allowed to modify node "`+other+`"`) {
		t.Fatalf("patching another node: %v, want Forbidden by NodeRestriction", err)
	}
	if c := hangwatch.NodeCond(t, cp, other, "RuntimeHung"); c != nil {
		t.Fatalf("the other node got %+v", c)
	}
}

func TestRestartCarriesOnTheNodesConditions(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c, cp := hangwatch.SharedContainerd(t), hangwatch.SharedControlPlane(t)
	node := hangwatch.UniqueNode("hw-restart")
	kc := hangwatch.CreateNode(t, cp, node)
	args := hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", "1s", "-t", "1s", "--max-period", "2s")
	first := hangwatch.StartDaemon(t, c.Endpoint, args...)
	hangwatch.WaitNode(t, cp, first, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
	thaw := harness.Freeze(t, c)
	raised := hangwatch.WaitNode(t, cp, first, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue))
	first.Stop(t)
	thaw()

	// The runtime answers again, but one good cycle is not enough to clear
	// (--runtime-hung-clear-after 4): the restarted hangwatch must carry on
	// True, with the same transition time, before it clears.
	second := hangwatch.StartDaemon(t, c.Endpoint, append(args, "--runtime-hung-clear-after", "4")...)
	harness.Eventually(t, 30*time.Second, "the restarted hangwatch's first status write", func() bool {
		text, err := second.Get("/metrics")
		return err == nil && harness.MetricValue(text, `hangwatch_node_status_patches_total{result="success"}`) >= 1
	}, harness.UnlessExited(second))
	refreshed := hangwatch.NodeCond(t, cp, node, "RuntimeHung")
	if refreshed == nil || refreshed.Status != corev1.ConditionTrue || !refreshed.LastTransitionTime.Equal(&raised.LastTransitionTime) {
		t.Fatalf("after the restart the Node shows %+v, want True since %v", refreshed, raised.LastTransitionTime)
	}
	hangwatch.WaitNode(t, cp, second, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))
}

func TestAPIServerRestartFlushesTheLatestState(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c, cp := hangwatch.SharedContainerd(t), harness.StartControlPlaneT(t) // its own: the test stops its API server
	node := hangwatch.UniqueNode("hw-apidown")
	kc := hangwatch.CreateNode(t, cp, node)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", hangwatch.NoLeaseConfig(t), "--period", "1s", "-t", "1s", "--max-period", "2s")...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionFalse))

	cp.StopAPIServer()
	thaw := harness.Freeze(t, c)
	harness.Eventually(t, 30*time.Second, "RuntimeHung True in /conditions", func() bool { return d.RuntimeHung(t) == "True" }, harness.UnlessExited(d))
	defer thaw() // stays frozen until the end: the state to flush is True
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	back := time.Now()
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", hangwatch.CondStatus(corev1.ConditionTrue))
	harness.Measure(t, "node_flushed_after_apiserver_return", time.Since(back))
	if took := time.Since(back); took > 10*time.Second {
		t.Errorf("the state reached the Node %v after the API server returned, want within the 8s retry cap", took)
	}
	if !d.Running() {
		t.Fatalf("%v exited while the API server was down", d)
	}
}

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/hangwatch/hangwatch/test/harness"
)

var (
	cpOnce sync.Once
	cp     *harness.ControlPlane
	cpErr  error
)

// controlPlane is one etcd and kube-apiserver for the package; each test
// uses nodes of its own name.
func controlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	harness.RequireRealParts(t)
	cpOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cp, cpErr = harness.StartControlPlane(ctx)
	})
	if cpErr != nil {
		t.Fatalf("start control plane: %v", cpErr)
	}
	return cp
}

// stopControlPlane stops the package's control plane, if it was started,
// and removes its folder (keys included).
func stopControlPlane() {
	if cp != nil {
		cp.Stop()
	}
}

var nodeSeq atomic.Int32

// uniqueNode names a node for one test run, so -count runs do not meet the
// nodes of earlier ones on the shared API server.
func uniqueNode(base string) string { return fmt.Sprintf("%s-%d", base, nodeSeq.Add(1)) }

// kubeletPosted is when the kubelet's conditions were last posted.
var kubeletPosted = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))

// kubeletConditions are what a kubelet would have posted.
func kubeletConditions() []corev1.NodeCondition {
	at := kubeletPosted
	return []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
			Message: "kubelet has sufficient memory available", LastHeartbeatTime: at, LastTransitionTime: at},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: at, LastTransitionTime: at},
	}
}

// createNode registers a Node with the kubelet's conditions and returns
// the node identity's kubeconfig.
func createNode(t *testing.T, cp *harness.ControlPlane, name string) string {
	t.Helper()
	ctx := context.Background()
	n, err := cp.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = kubeletConditions()
	if _, err := cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func nodeCond(t *testing.T, cp *harness.ControlPlane, node, condType string) *corev1.NodeCondition {
	t.Helper()
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == condType {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// waitNode polls the Node until ok holds for its condition condType, and
// returns the condition; it fails t after limit or when d exits first.
func waitNode(t *testing.T, cp *harness.ControlPlane, d *daemon, limit time.Duration, node, condType string,
	ok func(*corev1.NodeCondition) bool) *corev1.NodeCondition {
	t.Helper()
	c, _, err := pollNode(t, cp, limit, node, condType, ok, harness.UnlessExited(d))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pollNode is waitNode returning an error instead of failing t, and when
// the condition was first seen as wanted.
func pollNode(t *testing.T, cp *harness.ControlPlane, limit time.Duration, node, condType string,
	ok func(*corev1.NodeCondition) bool, opts ...harness.WaitOption) (*corev1.NodeCondition, time.Time, error) {
	t.Helper()
	var c *corev1.NodeCondition
	var seen time.Time
	_, err := harness.Poll(context.Background(), limit, "Node "+node+" "+condType, func() bool {
		c = nodeCond(t, cp, node, condType)
		seen = time.Now()
		return c != nil && ok(c)
	}, opts...)
	return c, seen, err
}

func status(want corev1.ConditionStatus) func(*corev1.NodeCondition) bool {
	return func(c *corev1.NodeCondition) bool { return c.Status == want }
}

// nodeEvents lists the core/v1 Events about a Node.
func nodeEvents(t *testing.T, cp *harness.ControlPlane, node string) []corev1.Event {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func hasEvent(events []corev1.Event, eventType, reason string) bool {
	for _, e := range events {
		if e.Type == eventType && e.Reason == reason && e.Source.Component == "hangwatch" {
			return true
		}
	}
	return false
}

// noLeaseConfig is a config file that drops KubeletUnresponsive, for tests
// about other conditions (their nodes have no kubelet renewing a Lease).
func noLeaseConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nconditions:\n- type: KubeletUnresponsive\n  disabled: true\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func nodeArgs(kubeconfig, node string, extra ...string) []string {
	return append([]string{"--kubeconfig", kubeconfig, "--node-name", node, "--kernel-lookback", "0s"}, extra...)
}

func TestFrozenRuntimeReachesTheNode(t *testing.T) {
	c, cp := sharedContainerd(t), controlPlane(t)
	const period, timeout = time.Second, time.Second
	node := uniqueNode("hw-freeze")
	kc := createNode(t, cp, node)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--config", noLeaseConfig(t), "--period", period.String(),
		"-t", timeout.String(), "--max-period", "2s")...)
	waitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))
	if c := nodeCond(t, cp, node, "KubeletUnresponsive"); c != nil {
		t.Errorf("a condition the config file disabled was written: %+v", c)
	}

	thaw := freeze(t, c)
	frozeAt := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True in /conditions", func() bool { return d.runtimeHung(t) == "True" }, harness.UnlessExited(d))
	decided := time.Now()
	waitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionTrue))
	onNode := time.Now()
	measure(t, "node_runtimehung_true_after_freeze", onNode.Sub(frozeAt))
	measure(t, "node_condition_written_after_change", onNode.Sub(decided))
	if limit := period + timeout + time.Second; onNode.Sub(frozeAt) > limit+generousSlack {
		t.Errorf("RuntimeHung reached the Node %v after the freeze, want within %v (+slack)", onNode.Sub(frozeAt), limit)
	}
	if onNode.Sub(decided) > time.Second {
		t.Errorf("the Node got the change %v after hangwatch made it, want under a second", onNode.Sub(decided))
	}
	harness.Eventually(t, 30*time.Second, "a Warning Event", func() bool {
		for _, e := range nodeEvents(t, cp, node) {
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
	waitNode(t, cp, d, 60*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))
	measure(t, "node_runtimehung_false_after_thaw", time.Since(thawedAt))
	harness.Eventually(t, 30*time.Second, "a Normal Event for the clear", func() bool {
		return hasEvent(nodeEvents(t, cp, node), corev1.EventTypeNormal, "RuntimeResponsive")
	}, harness.UnlessExited(d))
	events := cp.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name="+node)
	if !strings.Contains(events, "RuntimeResponsive") || !strings.Contains(events, "Warning") {
		t.Errorf("kubectl get events does not list hangwatch's events:\n%s", events)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range kubeletConditions() {
		if got := findCond(n, want.Type); got == nil || !equality.Semantic.DeepEqual(*got, want) {
			t.Errorf("the kubelet's %s changed: %+v, want %+v", want.Type, got, want)
		}
	}
}

func findCond(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

package hangwatch

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hangwatch/hangwatch/test/harness"
)

// kubeletPosted is when the kubelet's conditions were last posted.
var kubeletPosted = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))

// KubeletConditions are what a kubelet would have posted.
func KubeletConditions() []corev1.NodeCondition {
	at := kubeletPosted
	return []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
			Message: "kubelet has sufficient memory available", LastHeartbeatTime: at, LastTransitionTime: at},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: at, LastTransitionTime: at},
	}
}

// SetNodeCondition writes condType's status on the Node as an
// administrator's tool would (KEP-5683's maintenance conditions), beside
// what hangwatch writes.
func SetNodeCondition(t *testing.T, cp *harness.ControlPlane, node, condType string, status corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		c := corev1.NodeCondition{Type: corev1.NodeConditionType(condType), Status: status, Reason: "Test" + string(status),
			Message: "set by the test", LastHeartbeatTime: now, LastTransitionTime: now}
		n.Status.Conditions = append(slices.DeleteFunc(n.Status.Conditions, func(o corev1.NodeCondition) bool { return string(o.Type) == condType }), c)
		_, err = cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set %s=%s on Node %s: %v", condType, status, node, err)
	}
}

func NodeCond(t *testing.T, cp *harness.ControlPlane, node, condType string) *corev1.NodeCondition {
	t.Helper()
	return NodeCondition(context.Background(), cp, node, condType)
}

// NodeCondition is node's condType as the API server has it; nil when
// there is none or the Node cannot be read.
func NodeCondition(ctx context.Context, cp *harness.ControlPlane, node, condType string) *corev1.NodeCondition {
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
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

// WaitNode polls the Node until ok holds for its condition condType, and
// returns the condition; it fails t after limit or when d exits first.
func WaitNode(t *testing.T, cp *harness.ControlPlane, d *Daemon, limit time.Duration, node, condType string,
	ok func(*corev1.NodeCondition) bool) *corev1.NodeCondition {
	t.Helper()
	c, _, err := PollNode(t, cp, limit, node, condType, ok, harness.UnlessExited(d))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PollNode is waitNode returning an error instead of failing t, and when
// the condition was first seen as wanted.
func PollNode(t *testing.T, cp *harness.ControlPlane, limit time.Duration, node, condType string,
	ok func(*corev1.NodeCondition) bool, opts ...harness.WaitOption) (*corev1.NodeCondition, time.Time, error) {
	t.Helper()
	var c *corev1.NodeCondition
	var seen time.Time
	_, err := harness.Poll(context.Background(), limit, "Node "+node+" "+condType, func() bool {
		c = NodeCond(t, cp, node, condType)
		seen = time.Now()
		return c != nil && ok(c)
	}, opts...)
	return c, seen, err
}

func CondStatus(want corev1.ConditionStatus) func(*corev1.NodeCondition) bool {
	return func(c *corev1.NodeCondition) bool { return c.Status == want }
}

type ReloadCondition struct {
	Type, Status, Reason string
	LastTransitionTime   time.Time
}

func CondIs(status corev1.ConditionStatus, reason string) func(*corev1.NodeCondition) bool {
	return func(c *corev1.NodeCondition) bool {
		return c.Status == status && (reason == "" || c.Reason == reason)
	}
}

func FindCond(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func NodeReady(t *testing.T, cp *harness.ControlPlane, node string) corev1.NodeCondition {
	t.Helper()
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := FindCond(n, corev1.NodeReady); c != nil {
		return *c
	}
	return corev1.NodeCondition{}
}

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

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

// setNodeCondition writes condType's status on the Node as an
// administrator's tool would (KEP-5683's maintenance conditions), beside
// what hangwatch writes.
func setNodeCondition(t *testing.T, cp *harness.ControlPlane, node, condType string, status corev1.ConditionStatus) {
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

// renewLease renews the node Lease as the kubelet would until stop closes.
func renewLease(t *testing.T, client kubernetes.Interface, node string, every time.Duration, stop <-chan struct{}) (lastRenew func() time.Time) {
	t.Helper()
	ctx := context.Background()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To(int32(4 * every / time.Second)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Lease as the node: %v", err)
	}
	last := make(chan time.Time, 1)
	last <- lease.Spec.RenewTime.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if l, err := client.CoordinationV1().Leases("kube-node-lease").Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
				lease = l
				<-last
				last <- l.Spec.RenewTime.Time
			}
		}
	}()
	// Once stop is closed, the last renewal is read only after the loop has
	// ended, so an Update in flight at the stop is counted.
	return func() time.Time {
		select {
		case <-stop:
			<-done
		default:
		}
		v := <-last
		last <- v
		return v
	}
}

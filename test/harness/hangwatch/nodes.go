package hangwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

var (
	sharedCPOnce sync.Once
	sharedCP     *harness.ControlPlane
	sharedCPErr  error
)

// SharedControlPlane is one etcd and kube-apiserver for the package; each test
// uses nodes of its own name.
func SharedControlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	harness.RequireRealParts(t)
	sharedCPOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sharedCP, sharedCPErr = harness.StartControlPlane(ctx)
	})
	if sharedCPErr != nil {
		t.Fatalf("start control plane: %v", sharedCPErr)
	}
	return sharedCP
}

// stopSharedControlPlane stops the package's control plane, if it was started,
// and removes its folder (keys included).
func stopSharedControlPlane() {
	if sharedCP != nil {
		sharedCP.Stop()
	}
}

var nodeSeq atomic.Int32

// UniqueNode names a node for one test run, so -count runs do not meet the
// nodes of earlier ones on the shared API server.
func UniqueNode(base string) string { return fmt.Sprintf("%s-%d", base, nodeSeq.Add(1)) }

// CreateNode registers a Node with the kubelet's conditions and returns
// the node identity's kubeconfig.
func CreateNode(t *testing.T, cp *harness.ControlPlane, name string) string {
	t.Helper()
	ctx := context.Background()
	n, err := cp.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = KubeletConditions()
	if _, err := cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// NoLeaseConfig is a config file that drops KubeletUnresponsive, for tests
// about other conditions (their nodes have no kubelet renewing a Lease).
func NoLeaseConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nconditions:\n- type: KubeletUnresponsive\n  disabled: true\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func NodeArgs(kubeconfig, node string, extra ...string) []string {
	return append([]string{"--kubeconfig", kubeconfig, "--node-name", node, "--kernel-lookback", "0s"}, extra...)
}

// PodStartsArgs point hangwatch at k's Pods API socket and pod log
// directories, where a node has them under /var/lib/kubelet and /var/log.
func PodStartsArgs(k *kubelet.Kubelet, rt harness.RuntimePaths) []string {
	return []string{"--pods-api-socket", filepath.Join(k.RootDir(), "pods-api", "pods-api.sock"), "--pod-logs-dir", filepath.Join(k.Dir, "logs"),
		"--containerd-state-dir", rt.StateDir}
}

// RenewLease renews the node Lease as the kubelet would until stop closes.
func RenewLease(t *testing.T, client kubernetes.Interface, node string, every time.Duration, stop <-chan struct{}) (lastRenew func() time.Time) {
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

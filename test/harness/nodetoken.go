package harness

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeBoundToken creates a pod of ServiceAccount ns/sa bound to node (the
// ServiceAccount must exist) and returns a token bound to that pod: its
// user carries the node in authentication.kubernetes.io/node-name, as the
// token of a DaemonSet's pod on that node does, which is what hangwatch's
// admission policies hold a ServiceAccount's writes to. The pod is never
// run (no kubelet serves node); it is deleted when the test ends.
func (cp *ControlPlane) NodeBoundToken(t testing.TB, ns, sa, node string) string {
	t.Helper()
	ctx := context.Background()
	pod, err := cp.Admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: sa + "-" + node + "-"},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa,
			Containers: []corev1.Container{{Name: "c", Image: PauseImage}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod of %s/%s on node %s: %v", ns, sa, node, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cp.Admin.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return cp.Token(t, ns, sa, pod)
}

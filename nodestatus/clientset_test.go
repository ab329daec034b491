package nodestatus

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// clientsetNodes reads and patches Nodes through a (fake) Clientset, for
// the tests only: the agent itself links no Clientset.
type clientsetNodes struct{ c kubernetes.Interface }

func (n clientsetNodes) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return n.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (n clientsetNodes) PatchNodeStatus(ctx context.Context, name string, pt types.PatchType, body []byte, fieldManager string) (*corev1.Node, error) {
	return n.c.CoreV1().Nodes().Patch(ctx, name, pt, body, metav1.PatchOptions{FieldManager: fieldManager}, "status")
}

package manager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// slimNode drops from a cached Node what the controller never reads: the
// images (up to 50 entries a node) and every managedFields entry but the
// status writers', which say who wrote each condition.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.Status.Images = nil
	kept := n.ManagedFields[:0]
	for _, e := range n.ManagedFields {
		if e.Subresource == "status" {
			kept = append(kept, e)
		}
	}
	n.ManagedFields = kept
	return n, nil
}

// nodeLister lists the informer's cache for the controller.
type nodeLister struct{ corelisters.NodeLister }

func (l nodeLister) List() ([]*corev1.Node, error) { return l.NodeLister.List(labels.Everything()) }

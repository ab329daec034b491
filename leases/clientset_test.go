package leases

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// clientsetLeases reads Leases through a (fake) Clientset, for the tests
// only: the agent itself links no Clientset.
type clientsetLeases struct{ c kubernetes.Interface }

func (l clientsetLeases) GetLease(ctx context.Context, namespace, name, resourceVersion string) (*coordinationv1.Lease, error) {
	return l.c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{ResourceVersion: resourceVersion})
}

func (l clientsetLeases) ServerVersion(context.Context) ([]byte, error) {
	return []byte(`{"major":"1","minor":"37"}`), nil
}

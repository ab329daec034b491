package harness

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// NodeEvents lists the core/v1 Events about a Node.
func NodeEvents(t *testing.T, cp *ControlPlane, node string) []corev1.Event {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func HasEvent(events []corev1.Event, eventType, reason string) bool {
	for _, e := range events {
		if e.Type == eventType && e.Reason == reason && e.Source.Component == "hangwatch" {
			return true
		}
	}
	return false
}

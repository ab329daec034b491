package maintenance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTrueOn(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		{Type: "MaintenanceInProgress", Status: corev1.ConditionFalse},
	}}}
	if got := TrueOn(n); got != "" {
		t.Errorf("no maintenance condition True: %q", got)
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "DrainInProgress", Status: corev1.ConditionTrue})
	if got := TrueOn(n); got != "DrainInProgress" {
		t.Errorf("DrainInProgress True: %q", got)
	}
}

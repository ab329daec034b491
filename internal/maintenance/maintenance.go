// Package maintenance names the Node conditions that say an administrator
// is at work (KEP-5683, alpha in Kubernetes 1.37): while one is True,
// neither repair on the node nor hangwatch-remedy acts on a hang.
package maintenance

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Conditions are the maintenance condition types.
var Conditions = []string{"MaintenanceInProgress", "DrainInProgress", "GracefulNodeShutdownInProgress"}

// TrueOn names the first maintenance condition that is True on n; "" when
// none is.
func TrueOn(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Status == corev1.ConditionTrue && slices.Contains(Conditions, string(c.Type)) {
			return string(c.Type)
		}
	}
	return ""
}

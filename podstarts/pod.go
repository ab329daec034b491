package podstarts

import (
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podState is what the tracker keeps of one pod the kubelet reported.
type podState struct {
	key          string // namespace/name
	namespace    string
	name         string
	uid          string
	runtimeClass string
	// active: not terminal and not being deleted.
	active bool
	// readyToStart is its PodReadyToStartContainers condition: true or
	// false when reported, nil when not (a kubelet before 1.29).
	readyToStart *bool
}

func stateOf(p *corev1.Pod) podState {
	s := podState{key: p.Namespace + "/" + p.Name, namespace: p.Namespace, name: p.Name, uid: string(p.UID),
		active: p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed}
	if p.Spec.RuntimeClassName != nil {
		s.runtimeClass = *p.Spec.RuntimeClassName
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			ready := c.Status == corev1.ConditionTrue
			s.readyToStart = &ready
		}
	}
	return s
}

// notReadyToStart tells whether the kubelet reports the pod active and
// its sandbox not ready.
func (s podState) notReadyToStart() bool {
	return s.active && s.readyToStart != nil && !*s.readyToStart
}

// LogDirectory is where the kubelet keeps the pod's logs
// (<podLogsDir>/<namespace>_<name>_<uid>), made just before its first
// RunPodSandbox call.
func LogDirectory(podLogsDir, namespace, name, uid string) string {
	return filepath.Join(podLogsDir, strings.Join([]string{namespace, name, uid}, "_"))
}

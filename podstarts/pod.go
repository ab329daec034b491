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
	// networkFirst: a network of its own that containerd sets up before
	// it creates the sandbox container (not the host's, and not in a user
	// namespace, whose network comes after).
	networkFirst bool
	// readyToStart is its PodReadyToStartContainers condition: true or
	// false when reported, nil when not (a kubelet before 1.29).
	readyToStart *bool
	// containers are its init and regular containers, in the kubelet's
	// order.
	containers []containerState
}

// containerState is what the tracker keeps of one of a pod's containers.
type containerState struct {
	name string
	// firstStart: the kubelet reports it waiting to be created (reason
	// ContainerCreating or PodInitializing, or no status yet) on its
	// first attempt. A restart, a back-off or an error (ErrImagePull,
	// CreateContainerConfigError, CreateContainerError, ...) is not.
	firstStart bool
	running    bool
}

// creatingReasons are the kubelet's waiting reasons for a container
// before its first create has answered (kubelet: ContainerCreating, and
// PodInitializing while init containers run).
var creatingReasons = map[string]bool{"": true, "ContainerCreating": true, "PodInitializing": true}

func stateOf(p *corev1.Pod) podState {
	s := podState{key: p.Namespace + "/" + p.Name, namespace: p.Namespace, name: p.Name, uid: string(p.UID),
		active: p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed}
	s.networkFirst = !p.Spec.HostNetwork && (p.Spec.HostUsers == nil || *p.Spec.HostUsers)
	if p.Spec.RuntimeClassName != nil {
		s.runtimeClass = *p.Spec.RuntimeClassName
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			ready := c.Status == corev1.ConditionTrue
			s.readyToStart = &ready
		}
	}
	s.containers = containersOf(p.Spec.InitContainers, p.Status.InitContainerStatuses)
	s.containers = append(s.containers, containersOf(p.Spec.Containers, p.Status.ContainerStatuses)...)
	return s
}

func containersOf(spec []corev1.Container, statuses []corev1.ContainerStatus) []containerState {
	out := make([]containerState, 0, len(spec))
	for _, c := range spec {
		cs := containerState{name: c.Name, firstStart: true}
		for _, st := range statuses {
			if st.Name != c.Name {
				continue
			}
			waiting := st.State.Waiting
			cs.firstStart = waiting != nil && creatingReasons[waiting.Reason] && st.RestartCount == 0 && st.LastTerminationState.Terminated == nil
			cs.running = st.State.Running != nil
		}
		out = append(out, cs)
	}
	return out
}

// notReadyToStart tells whether the kubelet reports the pod active and
// its sandbox not ready.
func (s podState) notReadyToStart() bool {
	return s.active && s.readyToStart != nil && !*s.readyToStart
}

// running tells whether the kubelet reports the named container running.
func (s podState) running(container string) bool {
	for _, c := range s.containers {
		if c.name == container {
			return c.running
		}
	}
	return false
}

// LogDirectory is where the kubelet keeps the pod's logs
// (<podLogsDir>/<namespace>_<name>_<uid>), made just before its first
// RunPodSandbox call; a container's are in the directory of its name
// there, made after its image is on the node, just before CreateContainer.
func LogDirectory(podLogsDir, namespace, name, uid string) string {
	return filepath.Join(podLogsDir, strings.Join([]string{namespace, name, uid}, "_"))
}

package podstarts

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
)

// Wait is one pod or container waiting on the runtime now, as a person
// at the node's shell reads it (hangwatch diag).
type Wait struct {
	Pod          string `json:"pod"`                 // namespace/name
	Container    string `json:"container,omitempty"` // empty: the pod's sandbox
	Step         string `json:"step"`                // sandbox, network, create or start
	RuntimeClass string `json:"runtimeClass,omitempty"`
	// WaitedSeconds is since the kubelet made the log directory of the
	// step (this node's clock).
	WaitedSeconds float64 `json:"waitedSeconds"`
}

// StepSandbox names a pod's wait for RunPodSandbox.
const StepSandbox = "sandbox"

// List is every pod the kubelet has, in one call.
func (a *PodsAPI) List(ctx context.Context) ([]*corev1.Pod, error) {
	resp, err := a.client.ListPods(ctx, &podsv1alpha1.ListPodsRequest{})
	if err != nil {
		return nil, fmt.Errorf("list the kubelet's pods: %w", err)
	}
	out := make([]*corev1.Pod, 0, len(resp.GetPods()))
	for i, raw := range resp.GetPods() {
		var pod corev1.Pod
		if err := pod.Unmarshal(raw); err != nil {
			return nil, fmt.Errorf("pod %d of the kubelet's listing (%d bytes): %w", i, len(raw), err)
		}
		out = append(out, &pod)
	}
	return out, nil
}

// Waits are the waits on the runtime among pods now, longest first:
// asked and made say whether, and when, the kubelet made a pod's or a
// container's log directory; rt's lists, and tasks where it is
// containerd's, say which step each is at.
func Waits(ctx context.Context, pods []*corev1.Pod, asked func(namespace, name, uid, container string) (time.Time, bool), rt Runtime, tasks TaskDir, now time.Time) ([]Wait, error) {
	states := make([]podState, 0, len(pods))
	for _, p := range pods {
		states = append(states, stateOf(p))
	}
	made := map[string]time.Time{}
	cands := candidatesOf(states, func(namespace, name, uid, container string) bool {
		at, ok := asked(namespace, name, uid, container)
		made[uid+"/"+container] = at
		return ok
	})
	if len(cands) == 0 {
		return nil, nil
	}
	view, err := listRuntime(ctx, rt, tasks)
	if view == nil {
		return nil, err
	}
	var out []Wait
	for _, c := range cands {
		if c.sandbox && !view.ready(c.pod.uid) {
			out = append(out, Wait{Pod: c.pod.key, Step: view.sandboxStep(c.pod), RuntimeClass: c.pod.runtimeClass, WaitedSeconds: now.Sub(made[c.pod.uid+"/"]).Seconds()})
		}
		for _, name := range c.containers {
			if step, known := view.containerStep(c.pod.uid, name); known && step != "" {
				out = append(out, Wait{Pod: c.pod.key, Container: name, Step: step, RuntimeClass: c.pod.runtimeClass,
					WaitedSeconds: now.Sub(made[c.pod.uid+"/"+name]).Seconds()})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].WaitedSeconds > out[j].WaitedSeconds })
	return out, nil
}

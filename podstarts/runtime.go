package podstarts

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what the tracker asks the container runtime, only while a
// pod waits to start: its pod sandboxes and containers (a CRI runtime
// client's lists, with the kubelet's pod UID label).
type Runtime interface {
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
}

// podUIDLabel is the label the kubelet puts on every sandbox it asks for.
const podUIDLabel = "io.kubernetes.pod.uid"

// Step names the call a container waits on, and StepNetwork the part of
// RunPodSandbox a pod waits on when it can be told (TaskDir).
const (
	StepCreate  = "create"  // CreateContainer has not answered
	StepStart   = "start"   // created, StartContainer has not answered
	StepNetwork = "network" // no sandbox container yet: its network setup has not returned
)

// runtimeView is what the runtime said of the pods that wait: the ready
// sandbox of each pod UID, and the containers in those sandboxes.
type runtimeView struct {
	sandbox    map[string]string                  // pod UID -> its ready sandbox's ID
	containers map[string][]*runtimeapi.Container // ready sandbox ID -> its containers
	// tasksKnown: the runtime's task directory was read; unlisted is how
	// many tasks there are of no sandbox or container the runtime lists
	// (a sandbox container being created).
	tasksKnown bool
	unlisted   int
}

// listRuntime asks the runtime for its sandboxes and containers, then
// reads tasks (containerd's; "" or absent: not known).
func listRuntime(ctx context.Context, rt Runtime, tasks TaskDir) (*runtimeView, error) {
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's sandboxes: %w", err)
	}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's containers: %w", err)
	}
	v := &runtimeView{sandbox: map[string]string{}, containers: map[string][]*runtimeapi.Container{}}
	listed := map[string]bool{}
	for _, s := range sandboxes.GetItems() {
		listed[s.GetId()] = true
		if uid := s.GetLabels()[podUIDLabel]; uid != "" && s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			v.sandbox[uid] = s.GetId()
			v.containers[s.GetId()] = nil
		}
	}
	for _, c := range containers.GetContainers() {
		listed[c.GetId()] = true
		if in, ok := v.containers[c.GetPodSandboxId()]; ok {
			v.containers[c.GetPodSandboxId()] = append(in, c)
		}
	}
	ids, known, err := tasks.ids()
	if err != nil {
		return v, err
	}
	v.tasksKnown = known
	for _, id := range ids {
		if !listed[id] {
			v.unlisted++
		}
	}
	return v, nil
}

// sandboxStep is the part of RunPodSandbox a pod whose sandbox is not
// ready waits on: StepNetwork when the runtime sets its network up first
// and has made no sandbox container that it does not list yet, else
// StepSandbox (also without the runtime's word).
func (v *runtimeView) sandboxStep(p podState) string {
	if v != nil && v.tasksKnown && v.unlisted == 0 && p.networkFirst {
		return StepNetwork
	}
	return StepSandbox
}

// ready tells whether the runtime has a ready sandbox for the pod; false
// without the runtime's word (v nil).
func (v *runtimeView) ready(uid string) bool {
	return v != nil && v.sandbox[uid] != ""
}

// containerStep is step for a container of a pod whose sandbox the
// runtime has ready; known is false without the runtime's word or a
// ready sandbox.
func (v *runtimeView) containerStep(uid, container string) (step string, known bool) {
	if !v.ready(uid) {
		return "", false
	}
	return v.step(uid, container), true
}

// step says what the named container of the pod waits on in the runtime:
// "" when it has started (running or exited), StepStart when created and
// not started, StepCreate when the runtime has none of that name.
func (v *runtimeView) step(uid, container string) string {
	got := StepCreate
	for _, c := range v.containers[v.sandbox[uid]] {
		if c.GetMetadata().GetName() != container {
			continue
		}
		switch c.GetState() {
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			got = StepStart
		case runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED:
			return ""
		}
	}
	return got
}

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

// Step names the call a container waits on.
const (
	StepCreate = "create" // CreateContainer has not answered
	StepStart  = "start"  // created, StartContainer has not answered
)

// runtimeView is what the runtime said of the pods that wait: the ready
// sandbox of each pod UID, and the containers in those sandboxes.
type runtimeView struct {
	sandbox    map[string]string                  // pod UID -> its ready sandbox's ID
	containers map[string][]*runtimeapi.Container // ready sandbox ID -> its containers
}

// listRuntime asks the runtime for its ready sandboxes and their
// containers.
func listRuntime(ctx context.Context, rt Runtime) (*runtimeView, error) {
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{State: ready}})
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's ready sandboxes: %w", err)
	}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's containers: %w", err)
	}
	v := &runtimeView{sandbox: map[string]string{}, containers: map[string][]*runtimeapi.Container{}}
	for _, s := range sandboxes.GetItems() {
		if uid := s.GetLabels()[podUIDLabel]; uid != "" && s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			v.sandbox[uid] = s.GetId()
			v.containers[s.GetId()] = nil
		}
	}
	for _, c := range containers.GetContainers() {
		if in, ok := v.containers[c.GetPodSandboxId()]; ok {
			v.containers[c.GetPodSandboxId()] = append(in, c)
		}
	}
	return v, nil
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

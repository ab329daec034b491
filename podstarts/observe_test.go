package podstarts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers the two lists from what it holds, and counts them.
type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	err        error
	calls      int
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		if st := in.GetFilter().GetState(); (st == nil || st.State == s.State) && labelsMatch(in.GetFilter().GetLabelSelector(), s.Labels) {
			out = append(out, s)
		}
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	f.calls++
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, f.err
}

func (f *fakeRuntime) readySandbox(podName string) {
	f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{Id: "sb-" + podName, State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Labels: map[string]string{podUIDLabel: "uid-" + podName}})
}

func (f *fakeRuntime) container(podName, name string, state runtimeapi.ContainerState) {
	f.containers = append(f.containers, &runtimeapi.Container{Id: "c-" + podName + "-" + name, PodSandboxId: "sb-" + podName,
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, State: state})
}

// withContainer gives p a container "app" in the kubelet's state waiting.
func withContainer(p *corev1.Pod, reason string, restarts int32) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "app"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	return p
}

func trackerWith(t *testing.T, rt *fakeRuntime, asked asking, pods ...*corev1.Pod) (*Tracker, func(time.Duration)) {
	t.Helper()
	tr, clk := newSynced(t, asked, pods...)
	tr.runtime = rt
	return tr, clk.Step
}

// TestAPodPullingItsImageWaitsOnNothing: the kubelet still reports the
// sandbox not ready (its status is from the start of the sync that made
// it), but the runtime has it ready, and the container's log directory
// is not there yet (its image is pulling): nothing waits on the runtime,
// however long.
func TestAPodPullingItsImageWaitsOnNothing(t *testing.T) {
	rt := &fakeRuntime{}
	rt.readySandbox("big-image")
	tr, step := trackerWith(t, rt, asking{"big-image": true}, withContainer(pod("big-image", corev1.ConditionFalse), "ContainerCreating", 0))
	step(3 * time.Minute)
	obs, _ := tr.Observe(context.Background())
	if obs.Waiting != 0 || obs.ContainersWaiting != 0 {
		t.Fatalf("a pod pulling its image waits on the runtime: %+v", obs)
	}
}

// TestAContainerIsTimedThroughCreateAndStart: its log directory made and
// no such container in the ready sandbox, it waits on create; created,
// on start, with its wait kept; running, it waits no more, and a
// container started then.
func TestAContainerIsTimedThroughCreateAndStart(t *testing.T) {
	rt := &fakeRuntime{}
	rt.readySandbox("web-0")
	tr, step := trackerWith(t, rt, asking{"web-0": true, "web-0/app": true}, withContainer(pod("web-0", corev1.ConditionFalse), "ContainerCreating", 0))
	step(50 * time.Second)
	obs, _ := tr.Observe(context.Background())
	if obs.Waiting != 0 || obs.ContainersWaiting != 1 || obs.OldestContainer != "default/web-0/app" || obs.OldestContainerStep != StepCreate {
		t.Fatalf("a container whose create has not answered: %+v", obs)
	}
	step(10 * time.Second)
	rt.container("web-0", "app", runtimeapi.ContainerState_CONTAINER_CREATED)
	obs, _ = tr.Observe(context.Background())
	if obs.ContainersWaiting != 1 || obs.OldestContainerStep != StepStart || obs.OldestContainerWaitingSeconds != 10 || obs.SinceContainerStartedSeconds != 60 {
		t.Fatalf("created, not started: %+v", obs)
	}
	step(5 * time.Second)
	rt.containers[0].State = runtimeapi.ContainerState_CONTAINER_RUNNING
	obs, _ = tr.Observe(context.Background())
	if obs.ContainersWaiting != 0 || obs.SinceContainerStartedSeconds != 0 {
		t.Fatalf("running: %+v", obs)
	}
}

// TestOnlyAFirstStartWaits: a restart, a back-off and a start that
// answered with an error are the pod's, not a runtime that does not
// answer: none waits, though each has its log directory.
func TestOnlyAFirstStartWaits(t *testing.T) {
	rt := &fakeRuntime{}
	asked := asking{}
	var pods []*corev1.Pod
	for name, reason := range map[string]string{"crashloop": "CrashLoopBackOff", "bad-spec": "CreateContainerError",
		"no-binary": "RunContainerError", "no-image": "ErrImagePull", "no-key": "CreateContainerConfigError"} {
		pods = append(pods, withContainer(pod(name, corev1.ConditionTrue), reason, 0))
		rt.readySandbox(name)
		asked[name], asked[name+"/app"] = true, true
	}
	pods = append(pods, withContainer(pod("restarted", corev1.ConditionTrue), "ContainerCreating", 1))
	rt.readySandbox("restarted")
	asked["restarted"], asked["restarted/app"] = true, true
	tr, step := trackerWith(t, rt, asked, pods...)
	step(time.Minute)
	if obs, _ := tr.Observe(context.Background()); obs.ContainersWaiting != 0 || obs.Waiting != 0 {
		t.Fatalf("%+v", obs)
	}
	if rt.calls != 0 {
		t.Fatalf("%d calls to the runtime with nothing waiting on it", rt.calls)
	}
}

// TestWithoutTheRuntimesWordWaitsKeep: when the lists fail (a runtime
// that does not answer reads), a sandbox counts from the kubelet's report
// and a container already waiting keeps its wait and step.
func TestWithoutTheRuntimesWordWaitsKeep(t *testing.T) {
	rt := &fakeRuntime{}
	rt.readySandbox("web-0")
	tr, step := trackerWith(t, rt, asking{"web-0": true, "web-0/app": true, "held": true},
		withContainer(pod("web-0", corev1.ConditionTrue), "ContainerCreating", 0), pod("held", corev1.ConditionFalse))
	tr.Observe(context.Background())
	step(50 * time.Second)
	rt.err = errors.New("context deadline exceeded")
	obs, _ := tr.Observe(context.Background())
	if obs.Waiting != 1 || obs.OldestWaitingSeconds != 50 || obs.ContainersWaiting != 1 || obs.OldestContainerStep != StepCreate || obs.OldestContainerWaitingSeconds != 50 {
		t.Fatalf("%+v", obs)
	}
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestContainerdsTasksTellTheNetworkFromTheSandboxContainer: a pod whose
// sandbox is not ready, while containerd has made no sandbox container it
// does not list, waits for its network; one such container made, for the
// sandbox container; a host-network pod, or no task directory (CRI-O),
// always for its sandbox.
func TestContainerdsTasksTellTheNetworkFromTheSandboxContainer(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{}
	rt.readySandbox("running")
	hostNet := pod("host-net", corev1.ConditionFalse)
	hostNet.Spec.HostNetwork = true
	tr, step := trackerWith(t, rt, asking{"web-0": true}, pod("web-0", corev1.ConditionFalse), hostNet)
	tr.WithTasks(TaskDir(dir))
	step(50 * time.Second)
	for _, task := range []string{"sb-running", "c-running-app"} {
		if err := os.Mkdir(filepath.Join(dir, task), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rt.container("running", "app", runtimeapi.ContainerState_CONTAINER_RUNNING)
	if obs, _ := tr.Observe(context.Background()); obs.Waiting != 1 || obs.OldestSandboxStep != StepNetwork {
		t.Fatalf("no unlisted task: %+v", obs)
	}
	if err := os.Mkdir(filepath.Join(dir, "sb-being-made"), 0o755); err != nil {
		t.Fatal(err)
	}
	if obs, _ := tr.Observe(context.Background()); obs.OldestSandboxStep != StepSandbox || obs.Waiting != 1 {
		t.Fatalf("an unlisted sandbox container: %+v", obs)
	}
	rt.sandboxes = append(rt.sandboxes, &runtimeapi.PodSandbox{Id: "sb-being-made", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY})
	if obs, _ := tr.Observe(context.Background()); obs.OldestSandboxStep != StepNetwork {
		t.Fatalf("every task listed: %+v", obs)
	}
	tr.WithTasks(TaskDir(filepath.Join(dir, "absent")))
	if obs, _ := tr.Observe(context.Background()); obs.OldestSandboxStep != StepSandbox {
		t.Fatalf("no task directory: %+v", obs)
	}
	tr.WithTasks(TaskDir(dir))
	tr.asked = asking{"host-net": true}.asked
	if obs, _ := tr.Observe(context.Background()); obs.Waiting != 1 || obs.OldestPod != "default/host-net" || obs.OldestSandboxStep != StepSandbox {
		t.Fatalf("a host-network pod: %+v", obs)
	}
}

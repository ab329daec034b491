package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/kernellog"
)

// quietRuntime is an in-process CRI runtime with no pods that answers at
// once, until frozen: then every call waits for its context to end. Only
// for the in-process wiring tests; test/integration runs containerd.
type quietRuntime struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
	frozen atomic.Bool
	calls  atomic.Int64
}

func (f *quietRuntime) enter(ctx context.Context) error {
	f.calls.Add(1)
	if f.frozen.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *quietRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "quiet", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, f.enter(ctx)
}

func (f *quietRuntime) Status(ctx context.Context, _ *runtimeapi.StatusRequest, _ ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: "RuntimeReady", Status: true}, {Type: "NetworkReady", Status: true}}}}, f.enter(ctx)
}

func (f *quietRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{}, f.enter(ctx)
}

func (f *quietRuntime) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{}, f.enter(ctx)
}

func (f *quietRuntime) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest, _ ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, f.enter(ctx)
}

// clientsetAPI is the agent's API client over a (fake) Clientset: the
// agent itself links no Clientset.
type clientsetAPI struct{ c kubernetes.Interface }

func (a clientsetAPI) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return a.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (a clientsetAPI) PatchNodeStatus(ctx context.Context, name string, pt types.PatchType, body []byte, fieldManager string) (*corev1.Node, error) {
	return a.c.CoreV1().Nodes().Patch(ctx, name, pt, body, metav1.PatchOptions{FieldManager: fieldManager}, "status")
}

func (a clientsetAPI) CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	return a.c.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

func (a clientsetAPI) PatchEvent(ctx context.Context, namespace, name string, body []byte) (*corev1.Event, error) {
	return a.c.CoreV1().Events(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
}

func (a clientsetAPI) GetLease(ctx context.Context, namespace, name, _ string) (*coordinationv1.Lease, error) {
	return a.c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientsetAPI) PatchNode(ctx context.Context, name string, pt types.PatchType, body []byte) (*corev1.Node, error) {
	return a.c.CoreV1().Nodes().Patch(ctx, name, pt, body, metav1.PatchOptions{})
}

func (a clientsetAPI) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	list, err := a.c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items { // the fake Clientset ignores field selectors
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

func (a clientsetAPI) DeletePodNow(ctx context.Context, namespace, name, uid string) error {
	zero, u := int64(0), types.UID(uid)
	return a.c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &u}})
}

func (a clientsetAPI) ServerVersion(context.Context) ([]byte, error) {
	return json.Marshal(apiversion.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2"})
}

// scriptedKmsg is a kernel log that holds lines to replay at open and
// hands on the lines sent to it while followed.
type scriptedKmsg struct {
	lines chan string
	clk   interface{ Now() time.Time }
}

func (k *scriptedKmsg) ReadAvailable(func(kernellog.Record)) error { return nil }
func (k *scriptedKmsg) Stats() kernellog.KmsgStats                 { return kernellog.KmsgStats{} }
func (k *scriptedKmsg) Close() error                               { return nil }
func (k *scriptedKmsg) Follow(ctx context.Context, _ time.Duration, fn func(kernellog.Record), idle func()) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case line := <-k.lines:
			fn(kernellog.Record{Time: k.clk.Now(), Message: line})
			idle()
		}
	}
}

// The list streams are Unimplemented, as on containerd before 2.4.
func (f *quietRuntime) StreamPodSandboxes(ctx context.Context, _ *runtimeapi.StreamPodSandboxesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
	return nil, errors.Join(f.enter(ctx), status.Error(codes.Unimplemented, "StreamPodSandboxes"))
}

func (f *quietRuntime) StreamContainers(ctx context.Context, _ *runtimeapi.StreamContainersRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamContainersResponse], error) {
	return nil, errors.Join(f.enter(ctx), status.Error(codes.Unimplemented, "StreamContainers"))
}

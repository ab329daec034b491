package critest

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime answers the calls hangwatch sends a container runtime: Version,
// Status, ListPodSandbox, ListContainers, PodSandboxStatus,
// ContainerStatus, ImageFsInfo and the list streams. It serves as both a
// RuntimeServiceClient and an ImageServiceClient; the methods it does not
// define are never called by the code under test (they panic on the nil
// embedded interfaces). Safe for concurrent use.
type Runtime struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient

	pods []*runtimeapi.PodSandbox
	ctrs []*runtimeapi.Container

	mu    sync.Mutex
	hang  map[string]bool
	errs  map[string]error
	calls map[string]int
	// streams makes the list streams answer; without it they are
	// Unimplemented, as on containerd before 2.4.
	streams bool
	version string // RuntimeVersion; "1.0" when empty
	// release, closed by ReleaseHung, lets the hung calls answer.
	release chan struct{}
	// blocked counts the calls waiting in a hang now.
	blocked atomic.Int64
}

// New returns a runtime with the given numbers of sandboxes and
// containers, named "a-pod", "b-pod", ... and "a-ctr", "b-ctr", ...
func New(pods, ctrs int) *Runtime {
	f := &Runtime{hang: map[string]bool{}, errs: map[string]error{}, calls: map[string]int{}, release: make(chan struct{})}
	for i := 0; i < pods; i++ {
		f.pods = append(f.pods, &runtimeapi.PodSandbox{Id: string(rune('a'+i)) + "-pod"})
	}
	for i := 0; i < ctrs; i++ {
		f.ctrs = append(f.ctrs, &runtimeapi.Container{Id: string(rune('a'+i)) + "-ctr"})
	}
	return f
}

// Hang makes the calls of the methods given block from now on until their
// context ends or ReleaseHung.
func (f *Runtime) Hang(methods ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range methods {
		f.hang[m] = true
	}
}

// Fail makes the method's calls fail with err from now on; a nil err makes
// them answer again.
func (f *Runtime) Fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, method)
		return
	}
	f.errs[method] = err
}

// ReleaseHung lets every call hanging now answer, as a thawed runtime
// does, and hangs no method from now on.
func (f *Runtime) ReleaseHung() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang = map[string]bool{}
	close(f.release)
	f.release = make(chan struct{})
}

// SetStreams makes the list streams answer (true) or answer Unimplemented
// (false, the default, as containerd before 2.4 does).
func (f *Runtime) SetStreams(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams = on
}

// SetVersion sets the RuntimeVersion that Version answers ("1.0" until
// set), as an upgrade changes it.
func (f *Runtime) SetVersion(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = v
}

// Count says how many calls of the method have been sent.
func (f *Runtime) Count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// Blocked says how many calls are waiting in a hang now.
func (f *Runtime) Blocked() int {
	return int(f.blocked.Load())
}

// enter counts a call of method, then hangs it or fails it as told.
func (f *Runtime) enter(ctx context.Context, method string) error {
	f.mu.Lock()
	f.calls[method]++
	hang, err, release := f.hang[method], f.errs[method], f.release
	f.mu.Unlock()
	if hang {
		f.blocked.Add(1)
		defer f.blocked.Add(-1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	}
	return err
}

// Version answers RuntimeName "fake", the version SetVersion set.
func (f *Runtime) Version(ctx context.Context, _ *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	if err := f.enter(ctx, "Version"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	v := f.version
	f.mu.Unlock()
	if v == "" {
		v = "1.0"
	}
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: v, RuntimeApiVersion: "v1"}, nil
}

// Status answers RuntimeReady and NetworkReady true.
func (f *Runtime) Status(ctx context.Context, _ *runtimeapi.StatusRequest, _ ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	if err := f.enter(ctx, "Status"); err != nil {
		return nil, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: "RuntimeReady", Status: true}, {Type: "NetworkReady", Status: true}}}}, nil
}

// ListPodSandbox answers the sandboxes, honouring only a filter by ID.
func (f *Runtime) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.enter(ctx, "ListPodSandbox"); err != nil {
		return nil, err
	}
	if id := r.GetFilter().GetId(); id != "" {
		for _, p := range f.pods {
			if p.Id == id {
				return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{p}}, nil
			}
		}
		return &runtimeapi.ListPodSandboxResponse{}, nil
	}
	return &runtimeapi.ListPodSandboxResponse{Items: f.pods}, nil
}

// ListContainers answers the containers, honouring only a filter by
// sandbox ID.
func (f *Runtime) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	if err := f.enter(ctx, "ListContainers"); err != nil {
		return nil, err
	}
	if id := r.GetFilter().GetPodSandboxId(); id != "" {
		var out []*runtimeapi.Container
		for _, c := range f.ctrs {
			if c.PodSandboxId == id {
				out = append(out, c)
			}
		}
		return &runtimeapi.ListContainersResponse{Containers: out}, nil
	}
	return &runtimeapi.ListContainersResponse{Containers: f.ctrs}, nil
}

// PodSandboxStatus answers a status carrying the ID asked for.
func (f *Runtime) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.enter(ctx, "PodSandboxStatus"); err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: r.PodSandboxId}}, nil
}

// ContainerStatus answers a status carrying the ID asked for.
func (f *Runtime) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.enter(ctx, "ContainerStatus"); err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId}}, nil
}

// ImageFsInfo answers an empty response.
func (f *Runtime) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest, _ ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := f.enter(ctx, "ImageFsInfo"); err != nil {
		return nil, err
	}
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

var errUnimplemented = status.Error(codes.Unimplemented, "unknown method")

// StreamPodSandboxes answers Unimplemented on the first Recv, as gRPC
// delivers it from containerd before 2.4, unless SetStreams(true); then
// it sends the sandboxes one per message.
func (f *Runtime) StreamPodSandboxes(ctx context.Context, _ *runtimeapi.StreamPodSandboxesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
	if err := f.enter(ctx, "StreamPodSandboxes"); err != nil {
		return nil, err
	}
	if !f.streaming() {
		return &Stream[runtimeapi.StreamPodSandboxesResponse]{Err: errUnimplemented}, nil
	}
	s := &Stream[runtimeapi.StreamPodSandboxesResponse]{}
	for _, p := range f.pods {
		s.Msgs = append(s.Msgs, &runtimeapi.StreamPodSandboxesResponse{PodSandboxes: []*runtimeapi.PodSandbox{p}})
	}
	return s, nil
}

// StreamContainers is StreamPodSandboxes for containers.
func (f *Runtime) StreamContainers(ctx context.Context, _ *runtimeapi.StreamContainersRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamContainersResponse], error) {
	if err := f.enter(ctx, "StreamContainers"); err != nil {
		return nil, err
	}
	if !f.streaming() {
		return &Stream[runtimeapi.StreamContainersResponse]{Err: errUnimplemented}, nil
	}
	s := &Stream[runtimeapi.StreamContainersResponse]{}
	for _, c := range f.ctrs {
		s.Msgs = append(s.Msgs, &runtimeapi.StreamContainersResponse{Containers: []*runtimeapi.Container{c}})
	}
	return s, nil
}

func (f *Runtime) streaming() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams
}

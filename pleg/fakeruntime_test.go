package pleg

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// fakeRuntime answers the calls of the kubelet's relist at once, except
// the methods in hang, which block until their context ends, and those in
// errs, which fail. Only for unit tests: the real behaviour is tested
// against containerd in test/integration.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient
	pods  []*runtimeapi.PodSandbox
	ctrs  []*runtimeapi.Container
	hang  map[string]bool
	errs  map[string]error
	mu    sync.Mutex
	calls map[string]int
	// streams makes the list streams answer; without it they are
	// Unimplemented, as on containerd before 2.4.
	streams bool
}

func newFakeRuntime(pods, ctrs int) *fakeRuntime {
	f := &fakeRuntime{hang: map[string]bool{}, errs: map[string]error{}, calls: map[string]int{}}
	for i := 0; i < pods; i++ {
		f.pods = append(f.pods, &runtimeapi.PodSandbox{Id: string(rune('a'+i)) + "-pod"})
	}
	for i := 0; i < ctrs; i++ {
		f.ctrs = append(f.ctrs, &runtimeapi.Container{Id: string(rune('a'+i)) + "-ctr"})
	}
	return f
}

func (f *fakeRuntime) enter(ctx context.Context, method string) error {
	f.mu.Lock()
	f.calls[method]++
	hang, err := f.hang[method], f.errs[method]
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (f *fakeRuntime) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.enter(ctx, cri.MethodListPodSandbox); err != nil {
		return nil, err
	}
	if id := r.GetFilter().GetId(); id != "" { // the only filter the fake honours
		for _, p := range f.pods {
			if p.Id == id {
				return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{p}}, nil
			}
		}
		return &runtimeapi.ListPodSandboxResponse{}, nil
	}
	return &runtimeapi.ListPodSandboxResponse{Items: f.pods}, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	if err := f.enter(ctx, cri.MethodListContainers); err != nil {
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

func (f *fakeRuntime) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.enter(ctx, cri.MethodPodSandboxStatus); err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: r.PodSandboxId}}, nil
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.enter(ctx, cri.MethodContainerStatus); err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId}}, nil
}

// fakeStream hands out its messages one per Recv, then io.EOF, or err on
// the first Recv (as gRPC delivers Unimplemented).
type fakeStream[T any] struct {
	grpc.ClientStream
	msgs []*T
	err  error
}

func (s *fakeStream[T]) Recv() (*T, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

var errUnimplemented = status.Error(codes.Unimplemented, "unknown method")

// StreamPodSandboxes answers Unimplemented unless f.streams is set; then
// it sends the sandboxes one per message.
func (f *fakeRuntime) StreamPodSandboxes(ctx context.Context, _ *runtimeapi.StreamPodSandboxesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
	if err := f.enter(ctx, cri.MethodStreamPodSandboxes); err != nil {
		return nil, err
	}
	s := &fakeStream[runtimeapi.StreamPodSandboxesResponse]{err: errUnimplemented}
	if f.streams {
		s.err = nil
		for _, p := range f.pods {
			s.msgs = append(s.msgs, &runtimeapi.StreamPodSandboxesResponse{PodSandboxes: []*runtimeapi.PodSandbox{p}})
		}
	}
	return s, nil
}

// StreamContainers is StreamPodSandboxes for containers.
func (f *fakeRuntime) StreamContainers(ctx context.Context, _ *runtimeapi.StreamContainersRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamContainersResponse], error) {
	if err := f.enter(ctx, cri.MethodStreamContainers); err != nil {
		return nil, err
	}
	s := &fakeStream[runtimeapi.StreamContainersResponse]{err: errUnimplemented}
	if f.streams {
		s.err = nil
		for _, c := range f.ctrs {
			s.msgs = append(s.msgs, &runtimeapi.StreamContainersResponse{Containers: []*runtimeapi.Container{c}})
		}
	}
	return s, nil
}

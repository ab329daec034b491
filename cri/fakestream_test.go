package cri

import (
	"context"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeStream hands out its messages one per Recv, then io.EOF, or err on
// the first Recv (as gRPC delivers Unimplemented). The ClientStream methods
// it does not define are never called by the prober.
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

// StreamPodSandboxes answers Unimplemented, as containerd before 2.4 does,
// unless f.streams is set; then it sends the sandboxes one per message.
func (f *fakeRuntime) StreamPodSandboxes(ctx context.Context, _ *runtimeapi.StreamPodSandboxesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
	if err := f.enter(ctx, MethodStreamPodSandboxes, ""); err != nil {
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
	if err := f.enter(ctx, MethodStreamContainers, ""); err != nil {
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

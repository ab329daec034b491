package pleg

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// SetListStreaming says whether the kubelet lists with the streams of its
// CRIListStreaming gate. The relist then does the same, and, as the
// kubelet's cri-client does, falls back to the unary lists for good once a
// stream answers Unimplemented, until the gate's value changes.
func (r *Relister) SetListStreaming(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on != r.streamGate {
		r.streamGate = on
		r.useStreams.Store(on)
	}
}

// listSandboxes is the kubelet's ListPodSandbox: the stream when it uses
// streams, else (or on Unimplemented) the unary call. bytes is the largest
// answer received.
func (r *Relister) listSandboxes(run *relistRun, filter *runtimeapi.PodSandboxFilter) (items []*runtimeapi.PodSandbox, bytes int, err error) {
	if r.useStreams.Load() {
		err = r.call(run, cri.MethodStreamPodSandboxes, func(ctx context.Context) error {
			items, bytes, err = cri.StreamSandboxes(ctx, r.rt, filter, r.clk)
			if status.Code(err) == codes.Unimplemented {
				r.useStreams.Store(false)
				items, bytes, err = r.unarySandboxes(ctx, run, filter)
			}
			return err
		})
		return items, bytes, err
	}
	err = r.call(run, cri.MethodListPodSandbox, func(ctx context.Context) error {
		items, bytes, err = r.unarySandboxes(ctx, nil, filter)
		return err
	})
	return items, bytes, err
}

// unarySandboxes is the ListPodSandbox call itself; a fallback (run set)
// counts as a call of its own.
func (r *Relister) unarySandboxes(ctx context.Context, run *relistRun, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, int, error) {
	if run != nil {
		run.enter(cri.MethodListPodSandbox)
	}
	resp, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, 0, err
	}
	return resp.Items, proto.Size(resp), nil
}

// listContainers is listSandboxes for ListContainers.
func (r *Relister) listContainers(run *relistRun, filter *runtimeapi.ContainerFilter) (items []*runtimeapi.Container, bytes int, err error) {
	if r.useStreams.Load() {
		err = r.call(run, cri.MethodStreamContainers, func(ctx context.Context) error {
			items, bytes, err = cri.StreamContainers(ctx, r.rt, filter, r.clk)
			if status.Code(err) == codes.Unimplemented {
				r.useStreams.Store(false)
				items, bytes, err = r.unaryContainers(ctx, run, filter)
			}
			return err
		})
		return items, bytes, err
	}
	err = r.call(run, cri.MethodListContainers, func(ctx context.Context) error {
		items, bytes, err = r.unaryContainers(ctx, nil, filter)
		return err
	})
	return items, bytes, err
}

func (r *Relister) unaryContainers(ctx context.Context, run *relistRun, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, int, error) {
	if run != nil {
		run.enter(cri.MethodListContainers)
	}
	resp, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, 0, err
	}
	return resp.Containers, proto.Size(resp), nil
}

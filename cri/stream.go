package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The list streams of KEP-5825 (the kubelet's CRIListStreaming gate, alpha
// in 1.36): the same lists as ListPodSandbox and ListContainers, in as many
// messages as the runtime likes, so no answer hits the 16 MiB limit.
const (
	MethodStreamPodSandboxes = "StreamPodSandboxes"
	MethodStreamContainers   = "StreamContainers"
)

// MaxStreamBytes bounds what one list stream may deliver in all, four
// times the unary lists' 16 MiB limit: a runtime that streams without end
// fails the call instead of filling hangwatch's memory.
const MaxStreamBytes = 4 * MaxMessageSize

// streamSupport is whether the runtime implements the list streams:
// unknown until a stream answers, and no once one says Unimplemented (the
// kubelet's cri-client then falls back to the unary lists for good; the
// prober asks again when the runtime's version or socket changes).
type streamSupport struct{ v atomic.Int32 }

const (
	streamsUnknown int32 = iota
	streamsImplemented
	streamsUnimplemented
)

// Streaming is what a report says of the list streams.
type Streaming string

// The answers.
const (
	StreamingUnknown       Streaming = "unknown"
	StreamingImplemented   Streaming = "implemented"
	StreamingUnimplemented Streaming = "unimplemented"
)

func (s *streamSupport) usable() bool { return s.v.Load() != streamsUnimplemented }
func (s *streamSupport) forget()      { s.v.Store(streamsUnknown) }
func (s *streamSupport) state() Streaming {
	switch s.v.Load() {
	case streamsImplemented:
		return StreamingImplemented
	case streamsUnimplemented:
		return StreamingUnimplemented
	}
	return StreamingUnknown
}

// streamTally is what a stream has delivered so far; it is read while the
// stream may still be receiving, so every field is atomic.
type streamTally struct {
	start    time.Time // set by begin, in the receiving goroutine
	clk      clock.PassiveClock
	first    atomic.Int64 // nanoseconds from start to the first message, 0 before it
	messages atomic.Int64
	largest  atomic.Int64 // bytes of the largest message
	total    int64        // bytes so far; only the receiving goroutine uses it
	// onMessage, when set before the call starts, hears each message: a
	// stream that delivers is answering, however long it runs.
	onMessage func()
}

func newStreamTally(clk clock.PassiveClock) *streamTally {
	return &streamTally{clk: clk}
}

// begin marks the stream's send; the first message is timed from here, so
// it is never later than the call's own end.
func (t *streamTally) begin() { t.start = t.clk.Now() }

// saw counts one message; past MaxStreamBytes in all it is an error.
func (t *streamTally) saw(m proto.Message) error {
	if t.onMessage != nil {
		t.onMessage()
	}
	if t.messages.Add(1) == 1 {
		t.first.Store(max(int64(t.clk.Since(t.start)), 1))
	}
	n := int64(proto.Size(m))
	if n > t.largest.Load() {
		t.largest.Store(n)
	}
	if t.total += n; t.total > MaxStreamBytes {
		return fmt.Errorf("list stream over %d bytes after %d messages: not read further", MaxStreamBytes, t.messages.Load())
	}
	return nil
}

// fill copies what the stream delivered so far into r; a nil tally (a
// unary call) leaves r alone.
func (t *streamTally) fill(r *CallResult) {
	if t == nil {
		return
	}
	r.Messages = int(t.messages.Load())
	r.FirstMessage = time.Duration(t.first.Load())
	r.ResponseBytes = int(t.largest.Load())
}

// receiveAll reads a server stream to its end, as the kubelet does before
// it uses any of the items: each message goes to each, and the stream's
// error, if any, is returned (Unimplemented arrives here, on Recv).
func receiveAll[T any, PT interface {
	*T
	proto.Message
}](stream grpc.ServerStreamingClient[T], tally *streamTally, each func(PT)) error {
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := tally.saw(PT(m)); err != nil {
			return err
		}
		each(PT(m))
	}
}

// streamSandboxes lists sandboxes with StreamPodSandboxes.
func streamSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient, filter *runtimeapi.PodSandboxFilter, tally *streamTally) ([]*runtimeapi.PodSandbox, error) {
	tally.begin()
	stream, err := rt.StreamPodSandboxes(ctx, &runtimeapi.StreamPodSandboxesRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	var items []*runtimeapi.PodSandbox
	err = receiveAll(stream, tally, func(m *runtimeapi.StreamPodSandboxesResponse) { items = append(items, m.PodSandboxes...) })
	return items, err
}

// streamContainers lists containers with StreamContainers.
func streamContainers(ctx context.Context, rt runtimeapi.RuntimeServiceClient, filter *runtimeapi.ContainerFilter, tally *streamTally) ([]*runtimeapi.Container, error) {
	tally.begin()
	stream, err := rt.StreamContainers(ctx, &runtimeapi.StreamContainersRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	var items []*runtimeapi.Container
	err = receiveAll(stream, tally, func(m *runtimeapi.StreamContainersResponse) { items = append(items, m.Containers...) })
	return items, err
}

// StreamSandboxes lists sandboxes with StreamPodSandboxes to the stream's
// end, as the kubelet does under CRIListStreaming: the items and the bytes
// of the largest message. An Unimplemented answer comes back as its error.
func StreamSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient, filter *runtimeapi.PodSandboxFilter, clk clock.PassiveClock) ([]*runtimeapi.PodSandbox, int, error) {
	tally := newStreamTally(clk)
	items, err := streamSandboxes(ctx, rt, filter, tally)
	return items, int(tally.largest.Load()), err
}

// StreamContainers is StreamSandboxes for StreamContainers.
func StreamContainers(ctx context.Context, rt runtimeapi.RuntimeServiceClient, filter *runtimeapi.ContainerFilter, clk clock.PassiveClock) ([]*runtimeapi.Container, int, error) {
	tally := newStreamTally(clk)
	items, err := streamContainers(ctx, rt, filter, tally)
	return items, int(tally.largest.Load()), err
}

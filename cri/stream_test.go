package cri

import (
	"context"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/critest"
)

// TestUnimplementedStreamsAreAskedOnce: on a runtime without the list
// streams (containerd before 2.4) the first cycle learns it, drops the
// Unimplemented answers and later cycles do not ask again.
func TestUnimplementedStreamsAreAskedOnce(t *testing.T) {
	f := critest.New(2, 3)
	p, _, _ := newTestProber(f, testConfig())
	for i := 0; i < 3; i++ {
		c := p.Cycle(context.Background())
		if c.Streaming != StreamingUnimplemented {
			t.Fatalf("cycle %d: streaming %s, want unimplemented", i+1, c.Streaming)
		}
		for _, r := range c.Calls {
			if r.Method == MethodStreamPodSandboxes || r.Method == MethodStreamContainers {
				t.Fatalf("cycle %d kept %s (%s)", i+1, r.Method, r.Class)
			}
		}
	}
	if n := f.Count(MethodStreamPodSandboxes); n != 1 {
		t.Fatalf("StreamPodSandboxes sent %d times, want once", n)
	}
	c := p.Cycle(context.Background())
	for _, r := range c.Calls {
		if r.Class != ClassOK {
			t.Fatalf("cycle after the fallback: %s %s (%s), want every call ok", r.Method, r.Class, r.Err)
		}
	}
	if c.Streaming != StreamingUnimplemented {
		t.Fatalf("streaming %s, want unimplemented", c.Streaming)
	}
}

// TestImplementedStreamsAreTimedToTheirEnd: each stream is one call timed
// from send to EOF, with its messages, the time to the first, and its
// largest message as the response size (streams avoid the 16 MiB limit
// per answer, so the whole is not held against it).
func TestImplementedStreamsAreTimedToTheirEnd(t *testing.T) {
	f := critest.New(2, 3)
	f.SetStreams(true)
	p, _, _ := newTestProber(f, testConfig())
	c := p.Cycle(context.Background())
	if c.Streaming != StreamingImplemented {
		t.Fatalf("streaming %s, want implemented", c.Streaming)
	}
	pods, ctrs := findCall(t, c, MethodStreamPodSandboxes), findCall(t, c, MethodStreamContainers)
	if pods.Class != ClassOK || pods.Messages != 2 || ctrs.Messages != 3 {
		t.Fatalf("streams = %+v / %+v, want ok with 2 and 3 messages", pods, ctrs)
	}
	unary := findCall(t, c, MethodListContainers)
	if ctrs.ResponseBytes <= 0 || ctrs.ResponseBytes >= unary.ResponseBytes {
		t.Fatalf("stream size %d, want its largest message, under the whole list's %d", ctrs.ResponseBytes, unary.ResponseBytes)
	}
	if c.Sandboxes != 2 || c.Containers != 3 {
		t.Fatalf("counts %d/%d, want 2/3", c.Sandboxes, c.Containers)
	}
}

// TestAHungStreamIsAHungCall: a stream that does not end within the
// timeout is reported like any hung call, and names itself.
func TestAHungStreamIsAHungCall(t *testing.T) {
	f := critest.New(1, 1)
	f.SetStreams(true)
	f.Hang(MethodStreamContainers)
	p, clk, obs := newTestProber(f, testConfig())
	c := cycleWithFakeClock(t, p, clk, obs, 6, 1)
	r := findCall(t, c, MethodStreamContainers)
	if r.Class != ClassTimeout || !r.InFlight {
		t.Fatalf("StreamContainers = %+v, want an in-flight timeout", r)
	}
	obsv := c.Observation(testConfig().Timeout)
	if hm := obsv.HungMethods; len(hm) != 1 || hm[0] != MethodStreamContainers {
		t.Fatalf("hungMethods = %v, want [StreamContainers]", hm)
	}
}

// TestStreamsAreAskedAgainAfterAnUpgrade: a runtime that said
// Unimplemented is asked again once its version changes or its socket is
// recreated (an upgrade to containerd 2.4 brings the streams).
func TestStreamsAreAskedAgainAfterAnUpgrade(t *testing.T) {
	f := critest.New(1, 1)
	p, _, _ := newTestProber(f, testConfig())
	p.Cycle(context.Background())
	f.SetStreams(true)
	f.SetVersion("2.4.2")
	p.Cycle(context.Background()) // sees the new version; streams were not asked
	if c := p.Cycle(context.Background()); c.Streaming != StreamingImplemented {
		t.Fatalf("after the upgrade streaming is %s, want implemented", c.Streaming)
	}
	replaced := false
	p.RedialWith(func() bool { return replaced })
	f.SetStreams(false)
	replaced = true
	if c := p.Cycle(context.Background()); c.Streaming != StreamingUnimplemented {
		t.Fatalf("after a socket replacement (downgrade) streaming is %s, want unimplemented", c.Streaming)
	}
}

// TestStreamsNotProbedWhenTheKubeletDoesNotUseThem: with the kubelet's
// CRIListStreaming off, the daemon adds no stream calls.
func TestStreamsNotProbedWhenTheKubeletDoesNotUseThem(t *testing.T) {
	f := critest.New(1, 1)
	f.SetStreams(true)
	p, _, _ := newTestProber(f, testConfig())
	p.ProbeStreams(false)
	p.Cycle(context.Background())
	if n := f.Count(MethodStreamPodSandboxes); n != 0 {
		t.Fatalf("StreamPodSandboxes sent %d times with the kubelet's gate off", n)
	}
	p.ProbeStreams(true)
	if c := p.Cycle(context.Background()); c.Streaming != StreamingImplemented {
		t.Fatalf("gate on: streaming %s, want implemented", c.Streaming)
	}
}

// TestAnEndlessStreamIsBounded: a stream past MaxStreamBytes fails the
// call instead of growing without end.
func TestAnEndlessStreamIsBounded(t *testing.T) {
	big := &runtimeapi.StreamContainersResponse{Containers: []*runtimeapi.Container{{Id: strings.Repeat("x", 1<<20)}}}
	s := &critest.Stream[runtimeapi.StreamContainersResponse]{}
	for i := 0; i < MaxStreamBytes>>20+2; i++ {
		s.Msgs = append(s.Msgs, big)
	}
	tally := newStreamTally(clock.RealClock{})
	tally.begin()
	n := 0
	err := receiveAll(s, tally, func(*runtimeapi.StreamContainersResponse) { n++ })
	if err == nil || !strings.Contains(err.Error(), "list stream over") || n > MaxStreamBytes>>20 {
		t.Fatalf("err %v after %d messages, want the bound", err, n)
	}
}

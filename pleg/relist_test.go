package pleg

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/critest"

	"github.com/hangwatch/hangwatch/cri"
)

func TestRelistInspectsChangedPodsOnly(t *testing.T) {
	f := critest.New(3, 0)
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	first := r.Relist(context.Background())
	if first.Class != cri.ClassOK || first.InFlight || first.Pods != 3 || first.ChangedPods != 3 {
		t.Fatalf("first relist = %+v, want all 3 pods inspected", first)
	}
	if got := f.Count(cri.MethodPodSandboxStatus); got != 3 {
		t.Errorf("PodSandboxStatus calls = %d, want 3", got)
	}
	second := r.Relist(context.Background())
	if second.ChangedPods != 0 || second.Calls != 2 {
		t.Errorf("unchanged node: %+v, want only the two full lists", second)
	}
}

func TestRelistStuckIsReportedAndJoined(t *testing.T) {
	f := critest.New(1, 1)
	f.Hang(cri.MethodListPodSandbox)
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := NewRelister(f, clk, 0)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := r.Relist(ctx)
	clocktest.Await(t, "the stuck ListPodSandbox", func() bool { return f.Count(cri.MethodListPodSandbox) == 1 })
	if !got.InFlight || got.Class != cri.ClassTimeout {
		t.Fatalf("stuck relist = %+v", got)
	}
	clk.Step(40 * time.Second)
	again := r.Relist(ctx)
	if !again.InFlight || again.Duration != 40*time.Second || again.Method != cri.MethodListPodSandbox || f.Count(cri.MethodListPodSandbox) != 1 {
		t.Errorf("second look = %+v (ListPodSandbox sent %d times), want the same relist, 40s in", again, f.Count(cri.MethodListPodSandbox))
	}
}

func TestRelistTooLarge(t *testing.T) {
	f := critest.New(1, 1)
	f.Fail(cri.MethodListContainers, status.Error(codes.ResourceExhausted, "grpc: received message larger than max (17000000 vs. 16777216)"))
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	got := r.Relist(context.Background())
	if got.Class != cri.ClassTooLarge || got.Method != cri.MethodListContainers || got.InFlight {
		t.Errorf("relist = %+v, want too_large on ListContainers", got)
	}
}

func TestRelistFailedPodIsReinspected(t *testing.T) {
	f := critest.New(2, 0)
	f.Fail(cri.MethodPodSandboxStatus, status.Error(codes.Internal, "boom"))
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	if got := r.Relist(context.Background()); got.FailedPods != 2 || got.Class != cri.ClassError {
		t.Fatalf("relist = %+v", got)
	}
	f.Fail(cri.MethodPodSandboxStatus, nil)
	if got := r.Relist(context.Background()); got.ChangedPods != 2 || got.FailedPods != 0 || got.Class != cri.ClassOK {
		t.Errorf("next relist = %+v, want the failed pods inspected again", got)
	}
}

// TestRelistStreamsAsTheKubeletDoes: with the kubelet's CRIListStreaming on,
// the relist lists with the streams; on a runtime without them it falls
// back to the unary lists within the same relist and keeps to them.
func TestRelistStreamsAsTheKubeletDoes(t *testing.T) {
	f := critest.New(2, 2)
	f.SetStreams(true)
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	r.SetListStreaming(true)
	res := r.Relist(context.Background())
	if res.Class != cri.ClassOK || res.Pods != 2 || res.Containers != 2 {
		t.Fatalf("streamed relist = %+v, want 2 pods and 2 containers", res)
	}
	if f.Count(cri.MethodStreamPodSandboxes) == 0 || f.Count(cri.MethodListPodSandbox) != 0 {
		t.Fatalf("streams %d, unary %d: want streams only", f.Count(cri.MethodStreamPodSandboxes), f.Count(cri.MethodListPodSandbox))
	}

	old := critest.New(2, 2) // containerd before 2.4
	r2 := NewRelister(old, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r2.Close()
	r2.SetListStreaming(true)
	for i := 0; i < 2; i++ {
		if res := r2.Relist(context.Background()); res.Class != cri.ClassOK || res.Pods != 2 {
			t.Fatalf("relist %d on a runtime without streams = %+v, want ok through the fallback", i+1, res)
		}
	}
	if n := old.Count(cri.MethodStreamPodSandboxes); n != 1 {
		t.Fatalf("StreamPodSandboxes sent %d times, want once before falling back for good", n)
	}
}

// TestRelistStuckOnAStreamNamesIt: a hung stream is the call the relist
// waits on.
func TestRelistStuckOnAStreamNamesIt(t *testing.T) {
	f := critest.New(1, 1)
	f.SetStreams(true)
	f.Hang(cri.MethodStreamContainers)
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	r.SetListStreaming(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	clocktest.Await(t, "a relist in flight on the stream", func() bool {
		got := r.Relist(ctx)
		return got.InFlight && got.Method == cri.MethodStreamContainers
	})
}

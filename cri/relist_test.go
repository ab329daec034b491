package cri

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRelistInspectsChangedPodsOnly(t *testing.T) {
	f := newFakeRuntime(3, 0)
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	first := r.Relist(context.Background())
	if first.Class != ClassOK || first.InFlight || first.Pods != 3 || first.ChangedPods != 3 {
		t.Fatalf("first relist = %+v, want all 3 pods inspected", first)
	}
	if got := f.count("PodSandboxStatus"); got != 3 {
		t.Errorf("PodSandboxStatus calls = %d, want 3", got)
	}
	second := r.Relist(context.Background())
	if second.ChangedPods != 0 || second.Calls != 2 {
		t.Errorf("unchanged node: %+v, want only the two full lists", second)
	}
}

func TestRelistStuckIsReportedAndJoined(t *testing.T) {
	f := newFakeRuntime(1, 1)
	f.hang["ListPodSandbox"] = true
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	r := NewRelister(f, clk, 0)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := r.Relist(ctx)
	waitUntil(t, func() bool { return f.count("ListPodSandbox") == 1 })
	if !got.InFlight || got.Class != ClassTimeout {
		t.Fatalf("stuck relist = %+v", got)
	}
	clk.Step(40 * time.Second)
	again := r.Relist(ctx)
	if !again.InFlight || again.Duration != 40*time.Second || again.Method != MethodListPodSandbox || f.count("ListPodSandbox") != 1 {
		t.Errorf("second look = %+v (ListPodSandbox sent %d times), want the same relist, 40s in", again, f.count("ListPodSandbox"))
	}
}

func TestRelistTooLarge(t *testing.T) {
	f := newFakeRuntime(1, 1)
	f.errs["ListContainers"] = status.Error(codes.ResourceExhausted, "grpc: received message larger than max (17000000 vs. 16777216)")
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	got := r.Relist(context.Background())
	if got.Class != ClassTooLarge || got.Method != MethodListContainers || got.InFlight {
		t.Errorf("relist = %+v, want too_large on ListContainers", got)
	}
}

func TestRelistFailedPodIsReinspected(t *testing.T) {
	f := newFakeRuntime(2, 0)
	f.errs["PodSandboxStatus"] = status.Error(codes.Internal, "boom")
	r := NewRelister(f, clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	defer r.Close()
	if got := r.Relist(context.Background()); got.FailedPods != 2 || got.Class != ClassError {
		t.Fatalf("relist = %+v", got)
	}
	delete(f.errs, "PodSandboxStatus")
	if got := r.Relist(context.Background()); got.ChangedPods != 2 || got.FailedPods != 0 || got.Class != ClassOK {
		t.Errorf("next relist = %+v, want the failed pods inspected again", got)
	}
}

// waitUntil polls cond, for a goroutine the test cannot synchronize with
// otherwise; it fails after 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		runtime.Gosched()
	}
}

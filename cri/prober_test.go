package cri

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hangwatch/hangwatch/internal/critest"
)

func testConfig() Config {
	return Config{Timeout: 2 * time.Second, CallLifetime: time.Hour, SlowThreshold: time.Second, SampleSize: 10, Concurrency: 2}
}

func TestCycleHealthyCoversEveryObjectWhenFew(t *testing.T) {
	f := critest.New(2, 3)
	p, _, _ := newTestProber(f, testConfig())
	c := p.Cycle(context.Background())
	if c.Sandboxes != 2 || c.Containers != 3 {
		t.Fatalf("counts = %d sandboxes, %d containers; want 2, 3", c.Sandboxes, c.Containers)
	}
	if c.Runtime.Name != "fake" || len(c.Conditions) != 2 {
		t.Fatalf("runtime = %+v, conditions = %+v", c.Runtime, c.Conditions)
	}
	if got := len(c.Calls); got != 5+2+3 {
		t.Fatalf("calls = %d, want 10", got)
	}
	for _, r := range c.Calls {
		if r.Class != ClassOK || r.InFlight {
			t.Errorf("%s %s: class %s in flight %v, want ok", r.Method, r.Object, r.Class, r.InFlight)
		}
	}
}

// TestAlternateKindsReadsSandboxesThenContainers: a daemon's cycles read
// one kind each, in turn.
func TestAlternateKindsReadsSandboxesThenContainers(t *testing.T) {
	cfg := testConfig()
	cfg.AlternateKinds = true
	p, _, _ := newTestProber(critest.New(2, 3), cfg)
	for i, want := range []string{MethodPodSandboxStatus, MethodContainerStatus, MethodPodSandboxStatus} {
		c := p.Cycle(context.Background())
		perObject := map[string]int{}
		for _, r := range c.Calls[5:] {
			perObject[r.Method]++
		}
		if len(perObject) != 1 || perObject[want] == 0 {
			t.Errorf("cycle %d read %v, want only %s", i+1, perObject, want)
		}
	}
}

func TestHungCallIsReportedWhileInFlightAndNotResent(t *testing.T) {
	f := critest.New(1, 1)
	f.Hang(MethodListPodSandbox)
	p, clk, obs := newTestProber(f, testConfig())

	c := cycleWithFakeClock(t, p, clk, obs, 6, 1) // 4 fixed calls and 2 Unimplemented streams
	hung := findCall(t, c, MethodListPodSandbox)
	if hung.Class != ClassTimeout || !hung.InFlight || hung.Duration < 2*time.Second {
		t.Fatalf("ListPodSandbox = %+v, want an in-flight timeout of at least 2s", hung)
	}
	if c.Sandboxes != -1 || len(c.Calls) != 5 {
		t.Fatalf("a cycle whose list hung must not read objects: %d sandboxes, %d calls", c.Sandboxes, len(c.Calls))
	}
	if ages := p.OldestInFlight(); ages[MethodListPodSandbox] < 2*time.Second {
		t.Fatalf("in-flight ages = %v, want ListPodSandbox at least 2s", ages)
	}

	clk.Step(10 * time.Second)
	c = p.Cycle(context.Background()) // no waiting: the hung call is not sent again
	again := findCall(t, c, MethodListPodSandbox)
	if !again.InFlight || again.Class != ClassTimeout || again.Duration < 12*time.Second {
		t.Fatalf("second cycle ListPodSandbox = %+v, want in flight for at least 12s", again)
	}
	if n := f.Count(MethodListPodSandbox); n != 1 {
		t.Fatalf("ListPodSandbox sent %d times, want 1 while the first is out", n)
	}
	if n := f.Count(MethodVersion); n != 2 {
		t.Fatalf("Version sent %d times, want 2", n)
	}
}

func TestFrozenRuntimeCostsOneTimeout(t *testing.T) {
	f := critest.New(1, 1)
	for _, m := range Methods {
		f.Hang(m)
	}
	p, clk, obs := newTestProber(f, testConfig())
	start := clk.Now()
	c := cycleWithFakeClock(t, p, clk, obs, 0, 7)
	for _, r := range c.Calls {
		if r.Class != ClassTimeout {
			t.Errorf("%s: class %s, want timeout", r.Method, r.Class)
		}
	}
	// The seven fixed calls (streams included) wait together: one step of one timeout ends them.
	if elapsed := clk.Since(start); elapsed != testConfig().Timeout {
		t.Fatalf("cycle took %v of fake time, want about one timeout", elapsed)
	}
}

func TestPerObjectTimeoutStopsTheRest(t *testing.T) {
	f := critest.New(4, 4)
	f.Hang(MethodPodSandboxStatus)
	cfg := testConfig()
	cfg.Concurrency = 1
	p, clk, obs := newTestProber(f, cfg)
	c := cycleWithFakeClock(t, p, clk, obs, 7, 1)
	if n := f.Count(MethodPodSandboxStatus); n != 1 {
		t.Fatalf("PodSandboxStatus sent %d times, want 1: the first timeout stops the rest", n)
	}
	if n := f.Count(MethodContainerStatus); n != 0 {
		t.Fatalf("ContainerStatus sent %d times after a per-object timeout, want 0", n)
	}
	if r := findCall(t, c, MethodPodSandboxStatus); r.Object != "a-pod" || !r.InFlight {
		t.Fatalf("PodSandboxStatus = %+v, want a-pod in flight", r)
	}
	next := p.Cycle(context.Background())
	if r := findCall(t, next, MethodPodSandboxStatus); !r.InFlight || r.Object != "a-pod" {
		t.Fatalf("next cycle reports %+v, want the stuck a-pod call again", r)
	}
	if n := f.Count(MethodPodSandboxStatus); n != 1 {
		t.Fatalf("PodSandboxStatus sent %d times while one is stuck, want 1", n)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	f := critest.New(0, 0)
	f.Fail(MethodListContainers, status.Error(codes.ResourceExhausted, "grpc: received message larger than max (17000000 vs. 16777216)"))
	f.Fail(MethodImageFsInfo, status.Error(codes.Unimplemented, "not implemented"))
	f.Fail(MethodStatus, status.Error(codes.Unavailable, "connection refused"))
	p, _, _ := newTestProber(f, testConfig())
	c := p.Cycle(context.Background())
	want := map[string]Class{MethodVersion: ClassOK, MethodListContainers: ClassTooLarge, MethodImageFsInfo: ClassError, MethodStatus: ClassUnreachable}
	for m, cl := range want {
		if r := findCall(t, c, m); r.Class != cl {
			t.Errorf("%s: class %s, want %s (err %q)", m, r.Class, cl, r.Err)
		}
	}
}

func TestClassifyError(t *testing.T) {
	cases := map[error]Class{
		context.DeadlineExceeded:                   ClassTimeout,
		status.Error(codes.DeadlineExceeded, "x"):  ClassTimeout,
		context.Canceled:                           ClassCanceled,
		status.Error(codes.Unavailable, "x"):       ClassUnreachable,
		status.Error(codes.ResourceExhausted, "x"): ClassTooLarge,
		errors.New("boom"):                         ClassError,
		status.Error(codes.Internal, "x"):          ClassError,
	}
	for err, want := range cases {
		if got := ClassifyError(err); got != want {
			t.Errorf("ClassifyError(%v) = %s, want %s", err, got, want)
		}
	}
}

func findCall(t *testing.T, c Cycle, method string) CallResult {
	t.Helper()
	for _, r := range c.Calls {
		if r.Method == method {
			return r
		}
	}
	t.Fatalf("no %s call in cycle: %+v", method, c.Calls)
	return CallResult{}
}

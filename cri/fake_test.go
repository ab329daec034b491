package cri

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
)

// fakeRuntime answers the probed CRI calls at once, except the methods in
// hang, which block until their context ends. Only for unit tests: the real
// behaviour is tested against containerd in test/integration.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
	pods  []*runtimeapi.PodSandbox
	ctrs  []*runtimeapi.Container
	hang  map[string]bool
	errs  map[string]error
	mu    sync.Mutex
	calls map[string]int
	objs  []string
	// streams makes the list streams answer; without it they are
	// Unimplemented, as on containerd before 2.4.
	streams bool
	version string // RuntimeVersion; "1.0" when empty
	// release, closed by releaseHung, lets the hung calls answer.
	release chan struct{}
	// blocked counts the calls waiting in a hang now.
	blocked atomic.Int64
}

// releaseHung lets every call hanging now answer, as a thawed runtime does.
func (f *fakeRuntime) releaseHung() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang = map[string]bool{}
	close(f.release)
	f.release = make(chan struct{})
}

func newFakeRuntime(pods, ctrs int) *fakeRuntime {
	f := &fakeRuntime{hang: map[string]bool{}, errs: map[string]error{}, calls: map[string]int{}, release: make(chan struct{})}
	for i := 0; i < pods; i++ {
		f.pods = append(f.pods, &runtimeapi.PodSandbox{Id: string(rune('a'+i)) + "-pod"})
	}
	for i := 0; i < ctrs; i++ {
		f.ctrs = append(f.ctrs, &runtimeapi.Container{Id: string(rune('a'+i)) + "-ctr"})
	}
	return f
}

func (f *fakeRuntime) enter(ctx context.Context, method, obj string) error {
	f.mu.Lock()
	f.calls[method]++
	if obj != "" {
		f.objs = append(f.objs, method+"/"+obj)
	}
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

func (f *fakeRuntime) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	if err := f.enter(ctx, MethodVersion, ""); err != nil {
		return nil, err
	}
	v := f.version
	if v == "" {
		v = "1.0"
	}
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: v, RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) Status(ctx context.Context, _ *runtimeapi.StatusRequest, _ ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	if err := f.enter(ctx, MethodStatus, ""); err != nil {
		return nil, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: "RuntimeReady", Status: true}, {Type: "NetworkReady", Status: true}}}}, nil
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.enter(ctx, MethodListPodSandbox, ""); err != nil {
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
	if err := f.enter(ctx, MethodListContainers, ""); err != nil {
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
	if err := f.enter(ctx, MethodPodSandboxStatus, r.PodSandboxId); err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: r.PodSandboxId}}, nil
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.enter(ctx, MethodContainerStatus, r.ContainerId); err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId}}, nil
}

func (f *fakeRuntime) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest, _ ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := f.enter(ctx, MethodImageFsInfo, ""); err != nil {
		return nil, err
	}
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

// countingObserver counts probe reports so a test knows when fast calls
// have been reported.
type countingObserver struct{ probes, completions atomic.Int64 }

func (o *countingObserver) ObserveProbe(CallResult)      { o.probes.Add(1) }
func (o *countingObserver) ObserveCompletion(CallResult) { o.completions.Add(1) }

// cycleWithFakeClock runs one cycle and, once `fast` calls have been
// reported, steps the fake clock a timeout whenever `hung` calls are
// blocked in the fake runtime and as many timers wait, until the cycle
// returns. A reported call has stopped its timer, so the timers waiting
// then are the hung calls'.
func cycleWithFakeClock(t *testing.T, p *Prober, clk *clocktesting.FakeClock, obs *countingObserver, fast int64, hung int) Cycle {
	t.Helper()
	f := p.runtime.(*fakeRuntime)
	done := make(chan Cycle, 1)
	go func() { done <- p.Cycle(context.Background()) }()
	var c Cycle
	got := false
	returned := func() bool {
		select {
		case c = <-done:
			got = true
		default:
		}
		return got
	}
	clocktest.Await(t, "the fast calls", func() bool { return returned() || obs.probes.Load() >= fast })
	if !got {
		clocktest.Await(t, "the cycle to return", func() bool {
			if f.blocked.Load() >= int64(hung) && clk.Waiters() >= hung {
				clk.Step(p.cfg.Timeout)
			}
			return returned()
		})
	}
	return c
}

// sleepingLoops says n loops (Run, Heartbeat) wait between probes and
// no other timer is out: stepping the fake clock then moves only them.
func sleepingLoops(p *Prober, clk *clocktesting.FakeClock, n int) func() bool {
	return func() bool { return p.sleeping.Load() == int32(n) && clk.Waiters() == n }
}

func newTestProber(f *fakeRuntime, cfg Config) (*Prober, *clocktesting.FakeClock, *countingObserver) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	obs := &countingObserver{}
	return NewProber(f, f, cfg, clk, obs), clk, obs
}

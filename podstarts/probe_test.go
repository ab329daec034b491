package podstarts

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// probeRuntime is a fake runtime for the probe: RunPodSandbox waits for
// hold (when set) and then adds a ready sandbox; stop and remove count.
type probeRuntime struct {
	fakeRuntime
	hold             chan struct{}
	started          chan struct{}
	runs, stops, rms int
	image            bool
	stopNotFound     bool
	cfg              *runtimeapi.PodSandboxConfig // the last sandbox asked for
}

func (f *probeRuntime) RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	f.runs++
	f.cfg = in.GetConfig()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold // the runtime finishes it whatever the caller does
	}
	id := in.GetConfig().GetMetadata().GetName()
	f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: in.GetConfig().GetLabels()})
	if err := ctx.Err(); err != nil {
		return nil, status.Error(codes.DeadlineExceeded, err.Error())
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (f *probeRuntime) StopPodSandbox(context.Context, *runtimeapi.StopPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	f.stops++
	if f.stopNotFound {
		return nil, status.Error(codes.NotFound, "the kubelet stopped it first")
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *probeRuntime) RemovePodSandbox(_ context.Context, in *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.rms++
	for i, s := range f.sandboxes {
		if s.Id == in.GetPodSandboxId() {
			f.sandboxes = append(f.sandboxes[:i], f.sandboxes[i+1:]...)
			break
		}
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (f *probeRuntime) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	if !f.image {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "pause"}}, nil
}

func newProbe(rt *probeRuntime) (*Probe, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
	return &Probe{Runtime: rt, Images: rt, SandboxImage: DefaultSandboxImage, Clock: clk, Period: time.Minute,
		Quiet: func(time.Duration) bool { return true }, Timeout: time.Second}, clk
}

// TestAProbeStartsOneSandboxAndRemovesIt: a host-network sandbox of the
// probe's label, a new name each time, then stopped and removed; one the
// kubelet stopped first (NotFound) is still removed; one an earlier run
// left is removed too. Nothing of the probe's is left.
func TestAProbeStartsOneSandboxAndRemovesIt(t *testing.T) {
	rt := &probeRuntime{image: true}
	rt.sandboxes = []*runtimeapi.PodSandbox{{Id: "left-by-an-earlier-run", Labels: map[string]string{ProbeLabel: "true"}},
		{Id: "a-real-pod", Labels: map[string]string{podUIDLabel: "uid"}}}
	p, clk := newProbe(rt)
	if got := p.once(context.Background()); got != "ok" {
		t.Fatalf("result %q", got)
	}
	clk.Step(time.Second)
	rt.stopNotFound = true
	if got := p.once(context.Background()); got != "ok" {
		t.Fatalf("result %q", got)
	}
	if rt.runs != 2 || len(rt.sandboxes) != 1 || rt.sandboxes[0].Id != "a-real-pod" {
		t.Fatalf("%d runs, left %v", rt.runs, rt.sandboxes)
	}
}

// TestAProbeWaitsOnlyOnAQuietNodeWithItsImage: while real pods start, or
// without the sandbox image on the node, no probe is made (nothing pulls).
func TestAProbeWaitsOnlyOnAQuietNodeWithItsImage(t *testing.T) {
	rt := &probeRuntime{}
	p, _ := newProbe(rt)
	if p.imageThere(context.Background()) {
		t.Fatal("an image that is not there")
	}
	rt.image = true
	if !p.imageThere(context.Background()) {
		t.Fatal("the image is there")
	}
	tr, clk := newSynced(t, asking{"web-0": true}, pod("web-0", "False"))
	observe(t, tr)
	clk.Step(time.Hour)
	if tr.Quiet(time.Minute) {
		t.Fatal("quiet with a pod waiting for its sandbox")
	}
	tr2, clk2 := newSynced(t, asking{})
	if tr2.Quiet(time.Minute) {
		t.Fatal("quiet right after the first sync: no minute without a start has passed")
	}
	clk2.Step(time.Minute)
	if !tr2.Quiet(time.Minute) {
		t.Fatal("not quiet after a minute with nothing waiting")
	}
}

// TestAHungProbeIsTimedInFlightAndCleanedOnceItReturns: the probe's wait
// counts while RunPodSandbox is out; when the runtime finishes it late,
// the sandbox it made is removed.
func TestAHungProbeIsTimedInFlightAndCleanedOnceItReturns(t *testing.T) {
	rt := &probeRuntime{image: true, hold: make(chan struct{}), started: make(chan struct{})}
	p, clk := newProbe(rt)
	done := make(chan string)
	go func() { done <- p.once(context.Background()) }()
	<-rt.started
	clk.Step(50 * time.Second)
	if got := p.InFlight(); got != 50*time.Second {
		t.Fatalf("in flight %v, want 50s", got)
	}
	close(rt.hold)
	if got := <-done; got != "ok" {
		t.Fatalf("result %q", got)
	}
	if p.InFlight() != 0 || len(rt.sandboxes) != 0 {
		t.Fatalf("in flight %v, left %v", p.InFlight(), rt.sandboxes)
	}
}

// TestAPodNetworkProbeBacksOffAfterATimeout: asked, the probe's sandbox
// is on the pod network (its start runs the CNI plugin's ADD); after one
// that timed out (its pod IP may leak) no pod-network probe runs for an
// hour. A host-network probe never backs off.
func TestAPodNetworkProbeBacksOffAfterATimeout(t *testing.T) {
	rt := &probeRuntime{image: true}
	p, clk := newProbe(rt)
	p.PodNetwork = true
	if got := p.once(context.Background()); got != "ok" {
		t.Fatalf("probe %s", got)
	}
	if n := rt.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); n != runtimeapi.NamespaceMode_POD {
		t.Fatalf("the pod-network probe's sandbox has network %v", n)
	}
	if p.backingOff() {
		t.Fatal("backing off before any timeout")
	}
	p.timedOut = clk.Now()
	clk.Step(59 * time.Minute)
	if !p.backingOff() {
		t.Fatal("another pod-network probe 59m after one timed out")
	}
	clk.Step(2 * time.Minute)
	if p.backingOff() {
		t.Fatal("still backing off an hour after the timeout")
	}
	p.PodNetwork, p.timedOut = false, clk.Now()
	if p.backingOff() {
		t.Fatal("a host-network probe backs off")
	}
}

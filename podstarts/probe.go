package podstarts

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ProbeRuntime is what the probe asks of the runtime: the sandbox calls
// the kubelet makes (a CRI runtime client), and whether an image is there.
type ProbeRuntime interface {
	Runtime
	RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error)
	StopPodSandbox(ctx context.Context, in *runtimeapi.StopPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error)
	RemovePodSandbox(ctx context.Context, in *runtimeapi.RemovePodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error)
}

// ImageStatuser says whether an image is on the node (a CRI image client).
type ImageStatuser interface {
	ImageStatus(ctx context.Context, in *runtimeapi.ImageStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error)
}

// ProbeLabel marks the probe's sandboxes; ProbeNamespace is their
// namespace in the sandbox metadata (no pod of the API's).
const (
	ProbeLabel     = "hangwatch.io/write-path-probe"
	ProbeNamespace = "hangwatch-probe"
)

// DefaultSandboxImage is the kubelet's and containerd's default sandbox
// image of Kubernetes 1.35-1.37.
const DefaultSandboxImage = "registry.k8s.io/pause:3.10.1"

// ProbeDeadline is how long a probe's RunPodSandbox may take before it is
// given up: the kubelet's own wait (twice its 2-minute request timeout).
const ProbeDeadline = 4 * time.Minute

// PodNetworkBackoff is how long a pod-network probe waits after one that
// timed out: such a start can leak its pod IP (containerd#5438), so at most
// one a backoff.
const PodNetworkBackoff = time.Hour

// Probe starts and removes a sandbox of its own (on the host's network,
// or, asked, the pod network) through the CRI, as the kubelet would for a pod, when no pod has started on the node
// for a Period and none waits, timed while in flight: the write path seen
// on a node where nothing starts for hours. One at a time (Run is one
// loop), never while real pods start, and only when the runtime's sandbox
// image is already on the node (the probe never makes it pull).
type Probe struct {
	Runtime      ProbeRuntime
	Images       ImageStatuser
	SandboxImage string
	Clock        clock.WithTicker
	Period       time.Duration
	// Quiet tells whether no pod waits on the runtime and none has
	// started for a Period (Tracker.Quiet).
	Quiet func(time.Duration) bool
	// Timeout bounds the probe's other calls (lists, stop, remove, image).
	Timeout time.Duration
	Metrics *Metrics
	// PodNetwork puts the probe's sandbox on the pod network, so that its
	// start runs the CNI plugin's ADD (and its removal DEL); false: the
	// host's network, nothing to leak.
	PodNetwork bool

	mu       sync.Mutex
	since    time.Time // the probe's RunPodSandbox went out; zero when none is out
	noImage  bool      // the sandbox image was missing at the last look (logged once)
	timedOut time.Time // a pod-network probe last timed out
}

// InFlight is how long the probe's RunPodSandbox has waited; 0 when none
// is out.
func (p *Probe) InFlight() time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since.IsZero() {
		return 0
	}
	return p.Clock.Since(p.since)
}

// Run removes what earlier probes left, then probes every Period while
// the node is quiet, until ctx ends.
func (p *Probe) Run(ctx context.Context) {
	p.cleanup(ctx)
	tick := p.Clock.NewTicker(p.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			if p.Quiet(p.Period) && !p.backingOff() && p.imageThere(ctx) {
				result := p.once(ctx)
				if result == "timeout" && p.PodNetwork {
					p.timedOut = p.Clock.Now()
				}
				p.Metrics.probe(result)
			}
		}
	}
}

// backingOff: a pod-network probe timed out less than PodNetworkBackoff
// ago.
func (p *Probe) backingOff() bool {
	return p.PodNetwork && !p.timedOut.IsZero() && p.Clock.Since(p.timedOut) < PodNetworkBackoff
}

// once starts one sandbox, waits for it at most ProbeDeadline, and removes
// every sandbox of the probe's. Its result: ok, error or timeout.
func (p *Probe) once(ctx context.Context) string {
	name := fmt.Sprintf("hangwatch-probe-%d", p.Clock.Now().UnixNano()) // a new name each time: a name still reserved fails
	network := runtimeapi.NamespaceMode_NODE
	if p.PodNetwork {
		network = runtimeapi.NamespaceMode_POD
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: name, Namespace: ProbeNamespace},
		Labels:   map[string]string{ProbeLabel: "true"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: network, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	p.mark(p.Clock.Now())
	callCtx, cancel := context.WithTimeout(ctx, ProbeDeadline)
	_, err := p.Runtime.RunPodSandbox(callCtx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	cancel()
	took := p.InFlight()
	p.mark(time.Time{})
	p.cleanup(ctx)
	switch {
	case err == nil:
		klog.V(4).InfoS("Write path probe: a sandbox started", "took", took)
		return "ok"
	case status.Code(err) == codes.DeadlineExceeded:
		klog.InfoS("Write path probe: the runtime did not start a sandbox", "waited", took)
		return "timeout"
	default:
		klog.InfoS("Write path probe: the runtime refused a sandbox", "err", err, "took", took)
		return "error"
	}
}

func (p *Probe) mark(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since = at
}

// imageThere tells whether the sandbox image is on the node, logging
// once when it is not.
func (p *Probe) imageThere(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	resp, err := p.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: p.SandboxImage}})
	there := err == nil && resp.GetImage() != nil
	p.mu.Lock()
	defer p.mu.Unlock()
	if !there && !p.noImage {
		klog.InfoS("Write path probe skipped: the sandbox image is not on the node, and the probe never pulls it", "image", p.SandboxImage, "err", err)
	}
	p.noImage = !there
	return there
}

// cleanup stops and removes every sandbox of the probe's: the one just
// made, one whose start returned after the probe gave up on it, one the
// kubelet stopped first (it stops sandboxes it does not know), and those
// of an earlier run.
func (p *Probe) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*p.Timeout)
	defer cancel()
	resp, err := p.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{ProbeLabel: "true"}}})
	if err != nil {
		klog.V(2).InfoS("Write path probe: cannot list its sandboxes; they are removed next time", "err", err)
		return
	}
	for _, s := range resp.GetItems() {
		_, err := p.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.GetId()})
		if err == nil || status.Code(err) == codes.NotFound {
			_, err = p.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.GetId()})
		}
		if err != nil && status.Code(err) != codes.NotFound {
			klog.V(2).InfoS("Write path probe: cannot remove a sandbox of its own; it is removed next time", "sandbox", s.GetId(), "err", err)
		}
	}
}

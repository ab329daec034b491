package pleg

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
)

// KubeletRuntimeRequestTimeout is the kubelet's default
// --runtime-request-timeout: each CRI call of its relist may take this long.
const KubeletRuntimeRequestTimeout = 2 * time.Minute

// podUIDLabel is the label the kubelet puts on sandboxes and containers.
const podUIDLabel = "io.kubernetes.pod.uid"

// RelistResult is one emulated PLEG relist: the CRI calls the kubelet's
// GenericPLEG.Relist makes, timed.
type RelistResult struct {
	Start time.Time
	// Duration is the whole relist, or, while InFlight, how long it has run.
	Duration time.Duration
	InFlight bool
	// Method is the call the relist is waiting on (InFlight) or failed on.
	Method string
	Calls  int
	// Pods and Containers are what the full lists returned.
	Pods, Containers int
	// ChangedPods had their status read, as the kubelet's updateCache does.
	ChangedPods int
	FailedPods  int
	// ListBytes is the larger of the two full-list responses; the kubelet
	// fails its relist when one passes MaxMessageSize.
	ListBytes int
	Class     cri.Class
	Err       string
}

// Relister emulates the kubelet's relist against the runtime: ListPodSandbox
// and ListContainers (or their streams, as SetListStreaming says) with no filter, then for each pod that changed since
// the last relist, ListPodSandbox and ListContainers filtered by the pod's
// UID label, PodSandboxStatus for its sandboxes and ContainerStatus for its
// containers, one pod after another, each call bounded by the kubelet's own
// request timeout. One relist runs at a time: while one is stuck, callers
// get its progress, as the kubelet's PLEG is stuck behind its own.
type Relister struct {
	rt          runtimeapi.RuntimeServiceClient
	clk         clock.Clock
	callTimeout time.Duration
	ctx         context.Context
	cancel      context.CancelFunc

	mu         sync.Mutex
	run        *relistRun
	prev       map[string]string // pod key to its fingerprint at the last full list
	reinspect  map[string]bool
	streamGate bool        // the kubelet's CRIListStreaming, as last set
	useStreams atomic.Bool // streamGate, until a stream answers Unimplemented
}

// NewRelister returns a relister; callTimeout zero means the kubelet's 2m.
func NewRelister(rt runtimeapi.RuntimeServiceClient, clk clock.Clock, callTimeout time.Duration) *Relister {
	if callTimeout <= 0 {
		callTimeout = KubeletRuntimeRequestTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Relister{rt: rt, clk: clk, callTimeout: callTimeout, ctx: ctx, cancel: cancel, reinspect: map[string]bool{}}
}

// Close cancels a relist still out.
func (r *Relister) Close() { r.cancel() }

// Relist starts a relist, or joins the one still out, and waits for it
// until ctx ends; it then returns the relist's progress with InFlight set.
func (r *Relister) Relist(ctx context.Context) RelistResult {
	r.mu.Lock()
	run := r.run
	if run == nil {
		run = &relistRun{start: r.clk.Now(), done: make(chan struct{}), clk: r.clk}
		r.run = run
		go r.execute(run)
	}
	r.mu.Unlock()
	select {
	case <-run.done:
	case <-ctx.Done():
		select {
		case <-run.done:
		default:
			return run.progress()
		}
	}
	r.mu.Lock()
	if r.run == run {
		r.run = nil
	}
	r.mu.Unlock()
	return run.result
}

// relistRun is one relist in progress.
type relistRun struct {
	start  time.Time
	clk    clock.Clock
	done   chan struct{}
	mu     sync.Mutex
	method string
	calls  int
	result RelistResult
}

func (run *relistRun) enter(method string) {
	run.mu.Lock()
	run.method, run.calls = method, run.calls+1
	run.mu.Unlock()
}

func (run *relistRun) progress() RelistResult {
	run.mu.Lock()
	defer run.mu.Unlock()
	return RelistResult{Start: run.start, Duration: run.clk.Since(run.start), InFlight: true,
		Method: run.method, Calls: run.calls, Class: cri.ClassTimeout}
}

// call runs one CRI call of the relist under the kubelet's timeout.
func (r *Relister) call(run *relistRun, method string, f func(ctx context.Context) error) error {
	run.enter(method)
	ctx, cancel := context.WithTimeout(r.ctx, r.callTimeout)
	defer cancel()
	return f(ctx)
}

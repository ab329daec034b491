package cri

import (
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The RPCs a probe cycle times, named as in the CRI.
const (
	MethodVersion          = "Version"
	MethodStatus           = "Status"
	MethodListPodSandbox   = "ListPodSandbox"
	MethodListContainers   = "ListContainers"
	MethodPodSandboxStatus = "PodSandboxStatus"
	MethodContainerStatus  = "ContainerStatus"
	MethodImageFsInfo      = "ImageFsInfo"
)

// Methods lists the probed RPCs in the order reports show them.
var Methods = []string{MethodVersion, MethodStatus, MethodListPodSandbox, MethodListContainers,
	MethodStreamPodSandboxes, MethodStreamContainers, MethodPodSandboxStatus, MethodContainerStatus, MethodImageFsInfo}

// Config bounds what a Prober does.
type Config struct {
	// Timeout is how long the caller waits for one call (crictl's --timeout).
	Timeout time.Duration
	// CallLifetime is how long a call may stay out before it is cancelled;
	// until then it is tracked as in flight and not sent again.
	CallLifetime time.Duration
	// SlowThreshold marks an answered call as slow.
	SlowThreshold time.Duration
	// SampleSize is the most sandboxes, and the most containers, whose
	// status one cycle reads.
	SampleSize int
	// AlternateKinds reads sandboxes in one cycle and containers in the
	// next, halving the per-object calls a daemon adds next to the kubelet's.
	AlternateKinds bool
	// Concurrency is the most per-object calls out at once.
	Concurrency int
}

// DefaultConfig returns crictl's 2 s timeout and a light sample: one
// sandbox and one container a cycle (the changed ones first, then in turn).
func DefaultConfig() Config {
	return Config{Timeout: 2 * time.Second, CallLifetime: 2 * time.Second,
		SlowThreshold: time.Second, SampleSize: 1, Concurrency: 2}
}

// Prober runs probe cycles against one runtime. Cycles run one at a time;
// InFlight may be called concurrently with a cycle.
type Prober struct {
	runtime  runtimeapi.RuntimeServiceClient
	image    runtimeapi.ImageServiceClient
	cfg      Config
	clock    clock.Clock
	observer Observer
	inflight *inflightTracker
	redial   func() bool
	wake     chan struct{}
	relax    chan struct{}
	// backingOff: Run waits longer than a period (after a slow or hung
	// cycle); only then does Relax reach it.
	backingOff atomic.Bool

	mu          sync.Mutex
	sandboxes   *sampler
	containers  *sampler
	cycles      int
	streams     streamSupport
	lastVersion string
	// skipStreams: the kubelet does not list with the streams, so they are
	// not probed (ProbeStreams). By default they are, when implemented.
	skipStreams atomic.Bool
	// share: what the cycles and a heartbeat beside them share.
	share beatShare
	// sleeping counts the loops (Run, Heartbeat) waiting between probes:
	// a test steps its fake clock once every loop sleeps.
	sleeping atomic.Int32
}

// NewProber returns a prober over the given clients; observer may be nil.
func NewProber(rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient, cfg Config, clk clock.Clock, observer Observer) *Prober {
	if observer == nil {
		observer = nopObserver{}
	}
	if cfg.CallLifetime < cfg.Timeout {
		cfg.CallLifetime = cfg.Timeout
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	return &Prober{runtime: rt, image: img, cfg: cfg, clock: clk, observer: observer,
		inflight: newInflightTracker(clk), sandboxes: newSampler(), containers: newSampler(),
		wake: make(chan struct{}, 1), relax: make(chan struct{}, 1)}
}

// ProbeStreams says whether cycles time the list streams (when the runtime
// implements them): the daemon follows the kubelet's CRIListStreaming gate,
// so it adds no calls the kubelet does not make. On by default.
func (p *Prober) ProbeStreams(on bool) { p.skipStreams.Store(!on) }

// RedialWith has each cycle first call redial (a Conn's RedialIfReplaced),
// so a runtime that restarted is dialed again at once. Call before Run.
func (p *Prober) RedialWith(redial func() bool) { p.redial = redial }

// Config returns the prober's effective configuration.
func (p *Prober) Config() Config { return p.cfg }

// InFlight lists the calls that are out now, oldest first.
func (p *Prober) InFlight() []InFlight { return p.inflight.snapshot() }

// Unanswered is, of methods, the one whose calls have gone longest with
// no answer at all while one is out, and for how long (0: none).
func (p *Prober) Unanswered(methods []string) (string, time.Duration) {
	return p.inflight.Unanswered(methods)
}

// Silent is how long every one of methods has gone without any answer (a
// list stream's message is one): the shortest time since one of them was
// answered.
func (p *Prober) Silent(methods []string) time.Duration {
	return p.inflight.Silent(methods)
}

// OldestInFlight returns, per method with a call out, how long it has
// waited for an answer: its oldest outstanding call's age, or the
// method's whole silence when longer (a call cancelled at CallLifetime and
// sent again does not start it again).
func (p *Prober) OldestInFlight() map[string]time.Duration { return p.inflight.oldestByMethod() }

type nopObserver struct{}

func (nopObserver) ObserveProbe(CallResult)      {}
func (nopObserver) ObserveCompletion(CallResult) {}
func (nopObserver) ObserveCycle(Cycle)           {}

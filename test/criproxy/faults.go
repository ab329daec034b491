package criproxy

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Fault holds matching calls: until released (Delay 0), or for Delay.
type Fault struct {
	// Method is the CRI method's short name, e.g. "ListPodSandbox".
	Method string
	// ID, when set, matches only calls about this container or sandbox
	// (ContainerStatus, PodSandboxStatus and the other per-object calls).
	ID string
	// Delay holds a call this long and then forwards it; 0 holds it until
	// the fault is released or the caller gives up.
	Delay time.Duration
}

type activeFault struct {
	Fault
	released chan struct{}
	held     int
}

type faults struct {
	mu     sync.Mutex
	active []*activeFault
}

func newFaults() *faults { return &faults{} }

// Inject adds a fault; the returned release lifts it and lets every call it
// holds go on to the runtime.
func (p *Proxy) Inject(f Fault) (release func()) {
	a := &activeFault{Fault: f, released: make(chan struct{})}
	p.faults.mu.Lock()
	p.faults.active = append(p.faults.active, a)
	p.faults.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { p.faults.remove(a) }) }
}

// Held is how many calls the proxy has held so far for a method.
func (p *Proxy) Held(method string) int {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	n := 0
	for _, a := range p.faults.active {
		if a.Method == method {
			n += a.held
		}
	}
	return n
}

func (fs *faults) remove(a *activeFault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, x := range fs.active {
		if x == a {
			fs.active = append(fs.active[:i], fs.active[i+1:]...)
			close(a.released)
			return
		}
	}
}

func (fs *faults) releaseAll() {
	fs.mu.Lock()
	active := fs.active
	fs.active = nil
	fs.mu.Unlock()
	for _, a := range active {
		close(a.released)
	}
}

// apply holds the call while a matching fault says so; it returns the
// caller's context error if the caller gives up first.
func (fs *faults) apply(ctx context.Context, fullMethod string, req []byte) error {
	method := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	a := fs.match(method, req)
	if a == nil {
		return nil
	}
	var timer <-chan time.Time
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-a.released:
		return nil
	case <-timer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (fs *faults) match(method string, req []byte) *activeFault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, a := range fs.active {
		if a.Method == method && (a.ID == "" || a.ID == objectID(method, req)) {
			a.held++
			return a
		}
	}
	return nil
}

// objectID is the container or sandbox a per-object request is about.
func objectID(method string, req []byte) string {
	var m proto.Message
	switch method {
	case "ContainerStatus":
		m = &runtimeapi.ContainerStatusRequest{}
	case "PodSandboxStatus":
		m = &runtimeapi.PodSandboxStatusRequest{}
	case "ContainerStats":
		m = &runtimeapi.ContainerStatsRequest{}
	case "PodSandboxStats":
		m = &runtimeapi.PodSandboxStatsRequest{}
	default:
		return ""
	}
	if proto.Unmarshal(req, m) != nil {
		return ""
	}
	type containerReq interface{ GetContainerId() string }
	type sandboxReq interface{ GetPodSandboxId() string }
	if c, ok := m.(containerReq); ok {
		return c.GetContainerId()
	}
	if s, ok := m.(sandboxReq); ok {
		return s.GetPodSandboxId()
	}
	return ""
}

package leases

import (
	"sync"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// inputState is the `lease` input as last seen: the last Lease reading and
// the last probe of the kubelet's /healthz. The reader and the prober
// update it from their goroutines; each update hands the input on, one at
// a time.
type inputState struct {
	mu      sync.Mutex
	emit    func(observations.Input)
	clk     clock.PassiveClock
	lease   Observation
	read    bool // a first Lease read is in: before it, probes wait
	healthz string
	late    lateLatch
}

func newInputState(emit func(observations.Input), clk clock.PassiveClock) *inputState {
	return &inputState{emit: emit, clk: clk}
}

// leaseRead takes a reading, hands the input on, and returns the last
// probe's result and the reading as handed on.
func (s *inputState) leaseRead(o Observation) (string, Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.LateWhileAnswering = s.late.update(o, answering(s.healthz), s.clk.Now())
	s.lease, s.read = o, true
	s.handOn()
	return s.healthz, o
}

// probed takes a probe's result, hands the input on once the Lease has
// been read, and says whether the kubelet just stopped answering 200, or
// a port that refused now holds a kubelet that does not (the Lease should
// be read now: it was read at the idle pace).
func (s *inputState) probed(result string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stopped := result != HealthzOK && result != s.healthz && (s.healthz == HealthzOK || s.healthz == HealthzRefused)
	s.healthz = result
	if s.read {
		s.handOn()
	}
	return stopped
}

func (s *inputState) handOn() {
	o := s.lease
	o.Healthz = s.healthz
	s.emit(o.Fields())
}

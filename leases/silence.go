package leases

import (
	"sync"
	"time"
)

// kubeletSilence times how long the kubelet's /healthz has given no
// answer at all: from the start of the first probe that timed out after
// its last answer.
type kubeletSilence struct {
	mu     sync.Mutex
	silent time.Time // zero: it answered (or refused) at the last probe
}

// probed records a probe sent at start and its result.
func (s *kubeletSilence) probed(start time.Time, result string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if result != HealthzNoAnswer {
		s.silent = time.Time{}
		return
	}
	if s.silent.IsZero() {
		s.silent = start
	}
}

func (s *kubeletSilence) since(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.silent.IsZero() {
		return 0
	}
	return now.Sub(s.silent)
}

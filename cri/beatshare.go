package cri

import (
	"sync/atomic"
	"time"
)

// beatShare is what the full cycles and the heartbeat share so that
// neither sends a call the other has just made. With the heartbeat on,
// the cycles leave Version to it and take the runtime's name and version
// from its last answer; the heartbeat leaves a beat that would come
// within a period after a cycle's start, or just before a cycle due, to
// that cycle, whose calls, timed in flight like a beat's, tell the same.
type beatShare struct {
	versionByBeat atomic.Bool
	runtime       atomic.Pointer[RuntimeInfo]
	lastCycle     atomic.Int64 // the last cycle's start, UnixNano
	nextCycle     atomic.Int64 // when Run starts the next one, UnixNano
}

// VersionByHeartbeat has the full cycles leave the Version call to a
// Heartbeat running beside them: 2 calls a minute fewer at the shipped 30 s
// cycles. Call it before Run, and run Heartbeat.
func (p *Prober) VersionByHeartbeat() { p.share.versionByBeat.Store(true) }

func (s *beatShare) cycleStarted(at time.Time) { s.lastCycle.Store(at.UnixNano()) }

func (s *beatShare) cycleDue(at time.Time) { s.nextCycle.Store(at.UnixNano()) }

// coveredFor is how much longer a beat due at now may wait: the rest of a
// period from the last cycle's start, or, when the next cycle is due
// within a fifth of a period, until a period after it. Run counts its
// wait from a cycle's end, so with the shipped 30 s and 2.5 s every
// twelfth beat falls just before a cycle; that one is left to the cycle,
// which leaves a gap of a period and a few milliseconds between probes
// (a fifth of a period at most).
func (s *beatShare) coveredFor(now time.Time, period time.Duration) time.Duration {
	if last := s.lastCycle.Load(); last != 0 {
		if since := now.Sub(time.Unix(0, last)); since >= 0 && since < period {
			return period - since
		}
	}
	if next := s.nextCycle.Load(); next != 0 {
		if until := time.Unix(0, next).Sub(now); until >= 0 && until <= period/5 {
			return until + period
		}
	}
	return 0
}

// learnRuntime keeps what a beat's Version said.
func (s *beatShare) learnRuntime(r CallResult) {
	if info, ok := runtimeInfo(r); ok {
		s.runtime.Store(&info)
	}
}

// runtimeOf is the runtime's name and version as the last beat said, for
// a cycle that did not ask.
func (s *beatShare) runtimeOf() RuntimeInfo {
	if info := s.runtime.Load(); info != nil {
		return *info
	}
	return RuntimeInfo{}
}

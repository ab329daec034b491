package cri

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Beat is one heartbeat: one call, Version or the list beat's
// ListPodSandbox, timed and tracked in flight like a cycle's (a call still
// out is not sent again).
type Beat struct {
	Call CallResult
	// Recovered says this beat answered after one of its kind that did
	// not: the runtime has just come back, and Run was woken for a full
	// cycle at once.
	Recovered bool
	// Eased says this beat answered within the slow threshold after a slow
	// one of its kind: Run's back-off was called off (Relax).
	Eased bool
}

// beatMethods are what the heartbeat sends, in turn. Version tells the
// cycles the runtime's name. ListPodSandbox, with a filter that matches no
// sandbox, goes through the runtime's list path (its sandbox store and the
// lock the kubelet's relist waits on) for an empty answer. A freeze is
// seen by either within a period and a timeout; a list path that wedges
// while Version answers, within two periods and a timeout (one when it was
// slow before, see beatMethod), however far the full cycles have backed
// off. Taking turns keeps the calls a minute what Version alone cost.
var beatMethods = []string{MethodVersion, MethodListPodSandbox}

// noSuchSandbox is the list beat's filter: an ID no runtime gives.
const noSuchSandbox = "hangwatch-list-beat-matches-nothing"

// Heartbeat sends the beat calls in turn, one every period, until ctx
// ends, handing each beat to sink. Its period never grows, so the runtime
// as a whole and its list path are watched at the healthy cadence
// whatever the full cycles' back-off, at the cost of the one call of each
// kind that may be out. Run the full cycles with Run alongside; a beat
// that answers after one of its kind that did not wakes them, one that
// answers on time after a slow one calls their back-off off. A beat due
// within a period after a cycle's start, or just before a cycle due, is
// left to the cycle (beatShare.coveredFor): the cycle's calls, timed in
// flight, tell what it would.
func (p *Prober) Heartbeat(ctx context.Context, period time.Duration, sink func(Beat)) {
	last := map[string]Class{}
	for n := 0; ; n++ {
		start := p.clock.Now() // not r.Start: a joined call may be older
		method := beatMethod(n, last)
		r := p.beatCall(ctx, method)
		if ctx.Err() != nil {
			return
		}
		if method == MethodVersion {
			p.share.learnRuntime(r)
		}
		b := judgeBeat(r, last)
		switch {
		case b.Recovered:
			p.Wake()
		case b.Eased:
			p.Relax()
		}
		sink(b)
		if !p.sleepToNextBeat(ctx, start, period) {
			return
		}
	}
}

// beatMethod is the n-th beat's call: Version and the list beat in turn,
// but the list beat while the last one was slow or hung. A list path that
// has slowed is the one likely to wedge next, so it is then watched every
// period; a freeze hangs the list beat as surely as Version; and a list
// call still out is joined, not sent again.
func beatMethod(n int, last map[string]Class) string {
	if c := last[MethodListPodSandbox]; c == ClassSlow || c == ClassTimeout {
		return MethodListPodSandbox
	}
	return beatMethods[n%len(beatMethods)]
}

// judgeBeat is r as a beat, judged against the last beat of its kind.
func judgeBeat(r CallResult, last map[string]Class) Beat {
	before, seen := last[r.Method]
	last[r.Method] = r.Class
	answered := func(c Class) bool { return c == ClassOK || c == ClassSlow }
	return Beat{Call: r, Recovered: seen && answered(r.Class) && !answered(before),
		Eased: seen && r.Class == ClassOK && before == ClassSlow}
}

// beatCall sends one beat: Version, joined with a cycle's when one is out,
// or the list beat, under a key of its own.
func (p *Prober) beatCall(ctx context.Context, method string) CallResult {
	if method == MethodVersion {
		return p.invoke(ctx, MethodVersion, "", func(ctx context.Context) (proto.Message, error) {
			return p.runtime.Version(ctx, &runtimeapi.VersionRequest{})
		})
	}
	return p.invokeTallied(ctx, callKey{method: MethodListPodSandbox, beat: true}, func(ctx context.Context) (proto.Message, error) {
		return p.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: noSuchSandbox}})
	}, nil)
}

// sleepToNextBeat waits until a period after the last beat's start, so a
// slow answer does not stretch the period, then for as long as a cycle
// covers the beat due; false when ctx ended first.
func (p *Prober) sleepToNextBeat(ctx context.Context, last time.Time, period time.Duration) bool {
	wait := period - p.clock.Since(last)
	for {
		if wait <= 0 {
			wait = p.share.coveredFor(p.clock.Now(), period)
		}
		if wait <= 0 {
			return true
		}
		if !p.sleep(ctx, wait) {
			return false
		}
		wait = 0
	}
}

// sleep waits d on the prober's clock; false when ctx ended first.
func (p *Prober) sleep(ctx context.Context, d time.Duration) bool {
	return p.sleepOrWake(ctx, d, nil, nil) != sleptCancelled
}

type slept int

const (
	sleptFull slept = iota
	sleptWoken
	sleptRelaxed
	sleptCancelled
)

// sleepOrWake waits d on the prober's clock, or until wake or relax
// delivers (Run's), or ctx ends, and says which ended it.
func (p *Prober) sleepOrWake(ctx context.Context, d time.Duration, wake, relax <-chan struct{}) slept {
	t := p.clock.NewTimer(d)
	defer t.Stop()
	p.sleeping.Add(1)
	defer p.sleeping.Add(-1)
	select {
	case <-ctx.Done():
		return sleptCancelled
	case <-wake:
		return sleptWoken
	case <-relax:
		return sleptRelaxed
	case <-t.C():
		return sleptFull
	}
}

// Wake cuts Run's current wait short: the next full cycle starts now.
func (p *Prober) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Relax calls Run's back-off off, when it is backing off: the next full
// cycle comes a period after the last one, as it would have had that one
// been clean.
func (p *Prober) Relax() {
	if !p.backingOff.Load() {
		return
	}
	select {
	case p.relax <- struct{}{}:
	default:
	}
}

// WithBeat is the cycle as the latest beat of a kind updates it. A beat
// the socket refused after the cycle stands for the whole cycle: the
// runtime is unreachable. No beat older than a cycle whose every call was
// refused changes it: the runtime, killed since (a repair's SIGKILL),
// answers nothing now, whatever its Version said before. A Version beat:
// see withVersionBeat. A list beat
// newer than the cycle and hung stands for the cycle's ListPodSandbox, so
// a list path that wedges raises RuntimeHung between cycles; one that
// answered changes nothing (the cycle's full list is the better evidence,
// and a hung list call stands until the next cycle).
func (c Cycle) WithBeat(b Beat) Cycle {
	newer := !b.Call.Start.Before(c.Start)
	switch {
	case !newer && c.refusedEveryCall():
		return c
	case newer && b.Call.Class == ClassUnreachable:
		// None of the cycle's calls would reach the runtime now either.
		c.Calls = []CallResult{b.Call}
		return c
	case b.Call.Method == MethodVersion:
		return c.withVersionBeat(b, newer)
	case b.Call.Method == MethodListPodSandbox && newer && b.Call.Class == ClassTimeout:
		return c.withCall(b.Call)
	}
	return c
}

// withVersionBeat: the beat's Version result replaces the cycle's when it
// is newer, and stands in for it when the cycle left Version to the
// heartbeat. An older beat then stands when it answered, or when its call
// was still out when reported: the beat joins a Version call still out
// rather than send another, so a Version that stays hung is reported with
// the start of a call older than every cycle after it, and it is still
// the newest word on Version. An older beat that failed and returned (a
// refused call before a restart) does not stand: the cycle's own calls
// are newer evidence. A cycle's other calls stand until the next cycle,
// so a healthy beat never clears a hung list call, and a hung beat raises
// RuntimeHung between cycles.
func (c Cycle) withVersionBeat(b Beat, newer bool) Cycle {
	own := slices.IndexFunc(c.Calls, func(r CallResult) bool { return r.Method == MethodVersion && r.Object == "" })
	answered := b.Call.Class == ClassOK || b.Call.Class == ClassSlow
	if own >= 0 && b.Call.Start.Before(c.Calls[own].Start) || own < 0 && !newer && !answered && !b.Call.InFlight {
		return c
	}
	return c.withCall(b.Call)
}

// withCall is the cycle with r in place of its own call of r's method (no
// object), or added; the cycle given is left as it was.
func (c Cycle) withCall(r CallResult) Cycle {
	calls := slices.Clone(c.Calls)
	if own := slices.IndexFunc(calls, func(x CallResult) bool { return x.Method == r.Method && x.Object == "" }); own >= 0 {
		calls[own] = r
	} else {
		calls = append(calls, r)
	}
	c.Calls = calls
	return c
}

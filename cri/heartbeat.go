package cri

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Beat is one heartbeat: the runtime's Version call, timed and tracked in
// flight like a cycle's (a Version still out is not sent again).
type Beat struct {
	Call CallResult
	// Recovered says this beat answered after one that did not: the runtime
	// has just come back, and Run was woken for a full cycle at once.
	Recovered bool
}

// Heartbeat calls Version every period until ctx ends, handing each beat
// to sink. Its period never grows: a frozen runtime is seen within one
// period and one timeout, whatever the full cycles' back-off, and costs
// it at most the one Version call that is out. Run the full cycles with
// Run alongside; a beat that answers after one that did not wakes them.
func (p *Prober) Heartbeat(ctx context.Context, period time.Duration, sink func(Beat)) {
	failing := false
	for {
		r := p.invoke(ctx, MethodVersion, "", func(ctx context.Context) (proto.Message, error) {
			return p.runtime.Version(ctx, &runtimeapi.VersionRequest{})
		})
		if ctx.Err() != nil {
			return
		}
		ok := r.Class == ClassOK || r.Class == ClassSlow
		b := Beat{Call: r, Recovered: ok && failing}
		failing = !ok
		if b.Recovered {
			p.Wake()
		}
		sink(b)
		t := p.clock.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Wake cuts Run's current wait short: the next full cycle starts now.
func (p *Prober) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// WithBeat is the cycle as the latest beat updates it: the beat's Version
// result replaces the cycle's when it is newer. A cycle's other calls
// stand until the next cycle, so a healthy beat never clears a hung list
// call, and a hung beat raises RuntimeHung between cycles. A beat the
// socket refused stands for the whole cycle: the runtime is unreachable.
func (c Cycle) WithBeat(b Beat) Cycle {
	if b.Call.Method != MethodVersion || b.Call.Start.Before(c.Start) {
		return c
	}
	if b.Call.Class == ClassUnreachable {
		// The socket refused a call made after the whole cycle: none of
		// the cycle's calls would reach the runtime now either.
		c.Calls = []CallResult{b.Call}
		return c
	}
	calls := make([]CallResult, 0, len(c.Calls)+1)
	replaced := false
	for _, r := range c.Calls {
		if r.Method == MethodVersion && r.Object == "" {
			if b.Call.Start.Before(r.Start) {
				return c
			}
			r, replaced = b.Call, true
		}
		calls = append(calls, r)
	}
	if !replaced {
		calls = append(calls, b.Call)
	}
	c.Calls = calls
	return c
}

package leases

import "time"

// LateHold is how long renewals must be on time again before a Lease seen
// late while the kubelet answered on the node stops being reported. An
// overloaded API server lets some renewals through and drops others: held
// for this long, KubeletUnresponsive changes at most twice in LateHold on
// each node rather than with every renewal that gets through, so the fleet
// does not add its own writes to the overload.
const LateHold = 5 * time.Minute

// lateRenewals is the number of missed renewals that makes a Lease late, as
// the built-in NodeLeaseNotRenewed rule counts them.
const lateRenewals = 2

// lateLatch remembers a Lease seen late while the kubelet answered on the
// node: the kubelet lives, but its writes do not reach the API server.
type lateLatch struct {
	held        bool
	onTimeSince time.Time // on the watch's clock; zero while late
}

// update takes one Lease reading, with whether the kubelet answered its
// last probe, and says whether the latch holds.
func (l *lateLatch) update(o Observation, answering bool, now time.Time) bool {
	if !o.Readable {
		return l.held // says nothing either way
	}
	switch late := o.MissedRenewals() >= lateRenewals; {
	case late && answering:
		l.held, l.onTimeSince = true, time.Time{}
	case late:
		l.onTimeSince = time.Time{} // the kubelet's own trouble: no news for the latch
	case l.held:
		if l.onTimeSince.IsZero() {
			l.onTimeSince = now
		}
		if now.Sub(l.onTimeSince) >= LateHold {
			l.held, l.onTimeSince = false, time.Time{}
		}
	}
	return l.held
}

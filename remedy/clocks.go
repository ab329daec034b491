package remedy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClockSlack is how far a writer's first-seen heartbeat may lie in the
// future of the controller's clock and still count as fresh at first sight.
const ClockSlack = 5 * time.Second

// Clocks time each node's conditions on the controller's own clock, as the
// node lifecycle controller times a node's heartbeat (its probeTimestamp):
// a condition's age is counted from when the controller saw its status
// change, and its freshness from when it saw its lastHeartbeatTime move.
// The writer's timestamps are compared only with the writer's own earlier
// ones, never with the controller's clock, so a node whose clock is off by
// minutes is neither acted on early nor kept fresh after its writer died.
//
// A condition seen for the first time (a new leader, a new node) counts
// from that sight: its writer's heartbeat is fresh only if it lies within
// the freshness window of the controller's clock (a heartbeat in the
// future, or older than the window, has an unknown age, and the condition
// is stale until the heartbeat moves), and its age starts at zero.
type Clocks struct {
	seen  map[clockKey]*sighting
	flaps map[clockKey]*flapping
	pass  int
}

type clockKey struct{ node, condition string }

// sighting is what the controller saw of one condition, on its clock.
type sighting struct {
	status     corev1.ConditionStatus
	transition metav1.Time // the writer's, compared only with itself
	heartbeat  metav1.Time // the writer's, compared only with itself
	since      time.Time   // the controller saw this status (fresh) first
	beatSeen   time.Time   // the controller saw the heartbeat move; zero: never, and unknown at first sight
	fresh      bool        // fresh at the last sighting
	pass       int         // the pass that last saw it
}

// NewClocks returns clocks that have seen nothing.
func NewClocks() *Clocks {
	return &Clocks{seen: map[clockKey]*sighting{}, flaps: map[clockKey]*flapping{}}
}

// Observe records the policy's conditions of nodes at now, the controller's
// time. Conditions of nodes no longer listed are forgotten when all is
// true (a full list), so a node deleted and made again starts afresh.
func (k *Clocks) Observe(p *Policy, nodes []*corev1.Node, now time.Time, all bool) {
	k.pass++
	pass := k.pass
	for _, n := range nodes {
		for _, c := range p.Conditions {
			if cond := condition(n, c.Type); cond != nil {
				k.observeOne(p, clockKey{n.Name, c.Type}, cond, now, pass)
			} else {
				delete(k.seen, clockKey{n.Name, c.Type})
			}
		}
	}
	if all {
		for key, s := range k.seen {
			if s.pass != pass {
				delete(k.seen, key)
			}
		}
		for key := range k.flaps {
			if k.seen[key] == nil {
				delete(k.flaps, key)
			}
		}
	}
}

func (k *Clocks) observeOne(p *Policy, key clockKey, cond *corev1.NodeCondition, now time.Time, pass int) {
	s := k.seen[key]
	window := 2 * p.HeartbeatPeriod.Duration
	if s == nil {
		s = &sighting{status: cond.Status, transition: cond.LastTransitionTime, heartbeat: cond.LastHeartbeatTime, since: now}
		if age := now.Sub(cond.LastHeartbeatTime.Time); !cond.LastHeartbeatTime.IsZero() && age >= -ClockSlack && age <= window {
			s.beatSeen = now
		}
		k.seen[key] = s
	}
	changed := s.status != cond.Status || !s.transition.Equal(&cond.LastTransitionTime)
	if changed || !s.heartbeat.Equal(&cond.LastHeartbeatTime) {
		s.beatSeen = now // a write by the condition's writer: it is alive
	}
	if changed {
		s.since = now
	}
	s.status, s.transition, s.heartbeat, s.pass = cond.Status, cond.LastTransitionTime, cond.LastHeartbeatTime, pass
	fresh := !s.beatSeen.IsZero() && now.Sub(s.beatSeen) <= window
	if fresh && !s.fresh {
		s.since = now // a status seen while stale is no evidence: its age starts when it is fresh
	}
	s.fresh = fresh
}

// forNode copies what k saw of one node, to plan from a fresh read of it
// without mixing that read into the cache's timeline.
func (k *Clocks) forNode(node string) *Clocks {
	out := NewClocks()
	out.pass = k.pass
	for key, s := range k.seen {
		if key.node == node {
			c := *s
			out.seen[key] = &c
		}
	}
	for key, f := range k.flaps {
		if key.node == node {
			c := *f
			out.flaps[key] = &c
		}
	}
	return out
}

// freshFor is how long node's condType stays fresh with no new heartbeat
// (window after the controller last saw it move); 0 when it is stale or
// never seen.
func (k *Clocks) freshFor(node, condType string, now time.Time, window time.Duration) time.Duration {
	s := k.seen[clockKey{node, condType}]
	if s == nil || !s.fresh {
		return 0
	}
	return max(s.beatSeen.Add(window).Sub(now), time.Nanosecond)
}

// Forget drops what was seen of node (deleted).
func (k *Clocks) Forget(node string) {
	for key := range k.seen {
		if key.node == node {
			delete(k.seen, key)
			delete(k.flaps, key)
		}
	}
}

// Reading is what the clocks say of one condition.
type Reading struct {
	Fresh bool
	// Held is how long the controller has seen the condition in its
	// status, fresh.
	Held time.Duration
}

// Read says whether node's condType is fresh at now and how long it has
// held its status; a condition never observed is stale.
func (k *Clocks) Read(node, condType string, now time.Time) Reading {
	s := k.seen[clockKey{node, condType}]
	if s == nil || !s.fresh {
		return Reading{}
	}
	return Reading{Fresh: true, Held: now.Sub(s.since)}
}

// flapping is one condition's taint history on the controller's clock.
type flapping struct {
	untainted time.Time // the controller's last removal of the taint
	count     int       // taints that came within flapWindow of a removal
}

// The per-node back-off for a flapping condition: each taint that comes
// within flapWindow of the last removal doubles clearAfter for that node
// and condition, up to maxClearAfter, so a condition that keeps flapping
// keeps its taint instead of letting pods land on and leave the node.
const (
	flapWindow    = time.Hour
	maxClearAfter = time.Hour
)

// Tainted records a taint added at now.
func (k *Clocks) Tainted(node, condType string, now time.Time) {
	f := k.flap(node, condType)
	if !f.untainted.IsZero() && now.Sub(f.untainted) < flapWindow {
		f.count++
	} else {
		f.count = 0
	}
}

// Untainted records a taint removed at now.
func (k *Clocks) Untainted(node, condType string, now time.Time) {
	k.flap(node, condType).untainted = now
}

func (k *Clocks) flap(node, condType string) *flapping {
	key := clockKey{node, condType}
	if k.flaps[key] == nil {
		k.flaps[key] = &flapping{}
	}
	return k.flaps[key]
}

// ClearAfter is clearAfter for node's condType, doubled for each recent flap.
func (k *Clocks) ClearAfter(node, condType string, clearAfter time.Duration) time.Duration {
	f := k.flaps[clockKey{node, condType}]
	if f == nil {
		return clearAfter
	}
	d := clearAfter
	for i := 0; i < f.count && d < maxClearAfter; i++ {
		d *= 2
	}
	return max(clearAfter, min(d, maxClearAfter)) // a policy's own clearAfter over an hour stands
}

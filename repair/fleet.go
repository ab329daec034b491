package repair

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// LeaseStore is what the fleet bound asks of the API server: the slot
// Leases in one namespace.
type LeaseStore interface {
	GetLease(ctx context.Context, namespace, name, resourceVersion string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// FleetSettings bound the restarts the whole fleet makes: at most
// MaxRestarts (of runtimes and kubelets) in any Window. 0: no bound.
type FleetSettings struct {
	MaxRestarts int
	Window      time.Duration
	Namespace   string
}

// SlotName is the name of the i-th slot Lease.
func SlotName(i int) string { return fmt.Sprintf("hangwatch-repair-slot-%d", i) }

// LeaseSlots is the fleet bound kept in MaxRestarts Leases
// (hangwatch-repair-slot-<i>) that every node's repair shares: a restart
// takes a slot by writing its node's name into it, and a slot is free
// again once this node has seen it unchanged for Window, on its own clock
// (as client-go's leader election times a Lease; no other machine's clock
// is read). A write races others with the Lease's resourceVersion, so two
// nodes never take one slot. At most MaxRestarts restarts are made in any
// Window across the fleet, counted from when each node saw each slot.
type LeaseSlots struct {
	Store LeaseStore
	Node  string
	Clock clock.PassiveClock

	mu   sync.Mutex
	seen map[string]slotSighting
}

// slotSighting is a slot as this node last saw it, and since when.
type slotSighting struct {
	version string
	since   time.Time
}

// Acquire takes a free slot for a restart of t on this node, or says why
// none is free. An error (the API server does not answer, or refuses)
// leaves the decision to this node's own budget.
func (s *LeaseSlots) Acquire(ctx context.Context, t Target, fs FleetSettings) (bool, string, error) {
	if fs.MaxRestarts <= 0 {
		return true, "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]slotSighting{}
	}
	now := s.Clock.Now()
	for i := range fs.MaxRestarts {
		took, err := s.take(ctx, fs, SlotName(i), t, now)
		if err != nil {
			return false, "", fmt.Errorf("repair.fleet: Lease %s/%s: %w", fs.Namespace, SlotName(i), err)
		}
		if took {
			return true, "", nil
		}
	}
	return false, fmt.Sprintf("the fleet made repair.fleet.maxRestarts (%d) restarts in the last %s (Leases %s/%s..%d)",
		fs.MaxRestarts, fs.Window, fs.Namespace, SlotName(0), fs.MaxRestarts-1), nil
}

// take takes the slot if it is free; false when another node holds it or
// won the race for it.
func (s *LeaseSlots) take(ctx context.Context, fs FleetSettings, name string, t Target, now time.Time) (bool, error) {
	l, err := s.Store.GetLease(ctx, fs.Namespace, name, "")
	if apierrors.IsNotFound(err) {
		_, err = s.Store.CreateLease(ctx, s.slot(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: name}}, fs, t, now))
		return s.won(name, err)
	}
	if err != nil {
		return false, err
	}
	seen, ok := s.seen[name]
	if !ok || seen.version != l.ResourceVersion {
		s.seen[name] = slotSighting{version: l.ResourceVersion, since: now}
		return false, nil // taken since this node last looked: held a whole window from now
	}
	if now.Sub(seen.since) < fs.Window {
		return false, nil
	}
	_, err = s.Store.UpdateLease(ctx, s.slot(l.DeepCopy(), fs, t, now))
	return s.won(name, err)
}

// won reads a write's error: a conflict or an existing slot is a race
// lost, not an error.
func (s *LeaseSlots) won(name string, err error) (bool, error) {
	switch {
	case err == nil:
		delete(s.seen, name) // its new version is this node's own write
		return true, nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return false, nil
	}
	return false, err
}

// slot is l written as taken by this node for t; the times are for
// people reading it, never for another node's decision.
func (s *LeaseSlots) slot(l *coordinationv1.Lease, fs FleetSettings, t Target, now time.Time) *coordinationv1.Lease {
	holder := s.Node + "/" + t
	seconds := int32(fs.Window / time.Second)
	at := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &holder, &seconds, &at, &at
	return l
}

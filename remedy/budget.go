package remedy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// RecentActionsAnnotation holds, on the budget's Lease, the fleet's recent
// actions as a JSON list, so the action budget outlives a leader.
const RecentActionsAnnotation = "hangwatch.io/recent-actions"

// RecordCapacity is how many actions the budget's record keeps: the most
// maxActionsPerMinute may allow, or the window's count would lose some.
const RecordCapacity = 100

// The budget's window, and how long a record is kept.
const (
	budgetWindow = time.Minute
	// peerTrust: a record another replica wrote is taken as expired only
	// when its time is older than this by our clock; younger, or in our
	// future, it counts as spent for a whole window from when we read it.
	// So the replicas' clocks need only agree within a minute.
	peerTrust  = 2 * time.Minute
	keepRecord = 10 * time.Minute
)

// Budget is the fleet's action budget: at most max new taints and node
// evictions in any minute, across leaders. A new leader reads what the
// last one spent; a budget that cannot be read or written refuses (fails
// closed).
type Budget struct {
	leases   coordinationclient.LeasesGetter // nil: kept in memory only
	lease    types.NamespacedName
	identity string
	loaded   bool
	record   []actionRecord
	object   *coordinationv1.Lease // as last read or written; nil: none yet
	spent    []time.Time           // our clock: when each counted action leaves the window's start
}

// actionRecord is one action as the Lease keeps it.
type actionRecord struct {
	Time      time.Time `json:"time"`
	Identity  string    `json:"identity"`
	Node      string    `json:"node"`
	Action    string    `json:"action"`
	Condition string    `json:"condition"`
}

// NewBudget keeps the budget on the Lease (nil leases: in memory only).
func NewBudget(leases coordinationclient.LeasesGetter, lease types.NamespacedName, identity string) *Budget {
	return &Budget{leases: leases, lease: lease, identity: identity}
}

// Room is how many actions limit still allows in the window at now,
// reading the Lease first if it has not been read; an error (the Lease or
// its record cannot be read) means no room.
func (b *Budget) Room(ctx context.Context, limit int, now time.Time) (int, error) {
	if !b.loaded {
		if err := b.load(ctx, now); err != nil {
			return 0, err
		}
	}
	b.prune(now)
	return max(limit-len(b.spent), 0), nil
}

func (b *Budget) prune(now time.Time) {
	kept := b.spent[:0]
	for _, t := range b.spent {
		if now.Sub(t) < budgetWindow {
			kept = append(kept, t)
		}
	}
	b.spent = kept
}

// Take spends one action at now if fewer than limit were spent in the
// window; the action is recorded before it is taken, so a leader that dies
// between the two has still spent it.
func (b *Budget) Take(ctx context.Context, limit int, a Action, now time.Time) (bool, error) {
	if !b.loaded {
		if err := b.load(ctx, now); err != nil {
			return false, err
		}
	}
	b.prune(now)
	if len(b.spent) >= limit {
		return false, nil
	}
	rec := actionRecord{Time: now, Identity: b.identity, Node: a.Node, Action: string(a.Kind), Condition: a.Condition}
	if err := b.write(ctx, rec, now); err != nil {
		b.loaded = false // read it again before the next action (another writer, say)
		return false, err
	}
	b.spent = append(b.spent, now)
	return true, nil
}

// load reads the Lease's record: ours at its time, another replica's as
// peerTrust says.
func (b *Budget) load(ctx context.Context, now time.Time) error {
	b.record, b.spent, b.object = nil, nil, nil
	if b.leases == nil {
		b.loaded = true
		return nil
	}
	l, err := b.leases.Leases(b.lease.Namespace).Get(ctx, b.lease.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read the action budget's Lease %s: %w", b.lease, err)
	default:
		b.object = l
		if raw := l.Annotations[RecentActionsAnnotation]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &b.record); err != nil {
				return fmt.Errorf("the action budget's Lease %s, annotation %s: %w", b.lease, RecentActionsAnnotation, err)
			}
		}
	}
	for _, r := range b.record {
		switch {
		case r.Identity == b.identity:
			b.spent = append(b.spent, r.Time)
		case now.Sub(r.Time) < peerTrust:
			b.spent = append(b.spent, now)
		}
	}
	b.loaded = true
	return nil
}

// write adds rec to the Lease's record, dropping records older than
// keepRecord, in one request: an update that holds only if no one else
// wrote since we read or wrote it (its resourceVersion).
func (b *Budget) write(ctx context.Context, rec actionRecord, now time.Time) error {
	if b.leases == nil {
		return nil
	}
	record := []actionRecord{rec}
	for _, r := range b.record {
		if now.Sub(r.Time) < keepRecord {
			record = append(record, r)
		}
	}
	sort.SliceStable(record, func(i, j int) bool { return record[i].Time.After(record[j].Time) })
	record = record[:min(len(record), RecordCapacity)]
	raw, err := json.Marshal(record)
	if err != nil {
		return err
	}
	leases := b.leases.Leases(b.lease.Namespace)
	var l *coordinationv1.Lease
	if b.object == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: b.lease.Name, Namespace: b.lease.Namespace,
			Annotations: map[string]string{RecentActionsAnnotation: string(raw)}}}
		l, err = leases.Create(ctx, l, metav1.CreateOptions{FieldManager: "hangwatch-remedy"})
	} else { // an update of the Lease as we last saw it: it fails if anyone wrote since
		l = b.object.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[RecentActionsAnnotation] = string(raw)
		l, err = leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "hangwatch-remedy"})
	}
	if err != nil {
		return fmt.Errorf("record the action on the Lease %s: %w", b.lease, err)
	}
	b.record, b.object = record, l
	return nil
}

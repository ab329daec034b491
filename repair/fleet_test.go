package repair

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// memLeases is an API server's Leases in memory, with resourceVersions.
type memLeases struct {
	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease
	rv     int
	down   bool
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (m *memLeases) GetLease(_ context.Context, ns, name, _ string) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errors.New("connection refused")
	}
	l, ok := m.leases[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	return l.DeepCopy(), nil
}

func (m *memLeases) CreateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := l.Namespace + "/" + l.Name
	if _, ok := m.leases[key]; ok {
		return nil, apierrors.NewAlreadyExists(leaseResource, l.Name)
	}
	return m.store(key, l), nil
}

func (m *memLeases) UpdateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := l.Namespace + "/" + l.Name
	if cur, ok := m.leases[key]; !ok || cur.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(leaseResource, l.Name, errors.New("the object has been modified"))
	}
	return m.store(key, l), nil
}

func (m *memLeases) store(key string, l *coordinationv1.Lease) *coordinationv1.Lease {
	if m.leases == nil {
		m.leases = map[string]*coordinationv1.Lease{}
	}
	m.rv++
	l = l.DeepCopy()
	l.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[key] = l
	return l.DeepCopy()
}

// TestTheFleetMakesAtMostItsRestartsInAWindow: 20 nodes whose runtimes
// hang together (a storage incident, a bad rollout) ask the shared slots
// every minute for an hour: at most maxRestarts restarts in any window,
// each node counting a slot taken from when it saw it; the API server
// down leaves each node to its own budget.
func TestTheFleetMakesAtMostItsRestartsInAWindow(t *testing.T) {
	store := &memLeases{}
	clk := clocktesting.NewFakeClock(t0)
	fs := FleetSettings{MaxRestarts: 3, Window: 10 * time.Minute, Namespace: "kube-system"}
	var nodes []*LeaseSlots
	for i := range 20 {
		nodes = append(nodes, &LeaseSlots{Store: store, Node: fmt.Sprintf("node-%d", i), Clock: clk})
	}
	var restarts []time.Time
	for minute := 0; minute < 60; minute++ {
		for _, n := range nodes {
			ok, why, err := n.Acquire(context.Background(), TargetRuntime, fs)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				restarts = append(restarts, clk.Now())
			} else if !strings.Contains(why, "repair.fleet.maxRestarts (3) restarts in the last 10m0s") {
				t.Fatalf("why: %q", why)
			}
		}
		clk.Step(time.Minute)
	}
	for i, at := range restarts {
		in := 0
		for _, other := range restarts[i:] {
			if other.Sub(at) < fs.Window {
				in++
			}
		}
		if in > fs.MaxRestarts {
			t.Fatalf("%d restarts in the window from %v: %v", in, at.Sub(t0), restarts)
		}
	}
	if len(restarts) < 12 {
		t.Fatalf("%d restarts in an hour, want the slots reused (at least 12)", len(restarts))
	}
	store.down = true
	if _, _, err := nodes[0].Acquire(context.Background(), TargetRuntime, fs); err == nil || !strings.Contains(err.Error(), "repair.fleet") {
		t.Fatalf("API server down: %v, want an error naming repair.fleet", err)
	}
}

// TestAFleetBoundHoldsARestartBack: the repairer asks the fleet before a
// kill, tells fleet-bound once, asks again a minute later, and a fleet it
// cannot reach leaves the node's own budget to decide.
func TestAFleetBoundHoldsARestartBack(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, Fleet: FleetSettings{MaxRestarts: 1, Window: time.Hour, Namespace: "ns"}})
	store := &memLeases{}
	other := &LeaseSlots{Store: store, Node: "other", Clock: g.clk}
	if ok, _, err := other.Acquire(context.Background(), TargetRuntime, g.settings.Fleet); !ok || err != nil {
		t.Fatalf("the other node's restart: %v %v", ok, err)
	}
	g.r.o.Fleet = &LeaseSlots{Store: store, Node: "me", Clock: g.clk}
	g.hang("VersionHung")
	g.run(5 * time.Minute)
	if g.sd.kills != 0 || g.count(OutcomeFleetBound) != 1 || !strings.Contains(g.notes.got[0], "RepairFleetBound") {
		t.Fatalf("kills = %d, fleet-bound %d, events %q", g.sd.kills, g.count(OutcomeFleetBound), g.notes.got)
	}
	store.down = true
	g.run(fleetRetry)
	if g.sd.kills == 0 {
		t.Fatalf("no kill with the API server down: the node's own budget decides then")
	}
}

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/nodelink"
	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// adminLeases is the fleet's Lease store through the control plane's
// admin client (the slots' RBAC and policy are TestTheFleetBoundHoldsOnA
// RealAPIServer's).
type adminLeases struct{ c kubernetes.Interface }

func (a adminLeases) GetLease(ctx context.Context, ns, name, rv string) (*coordinationv1.Lease, error) {
	return a.c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
}

func (a adminLeases) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return a.c.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
}

func (a adminLeases) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return a.c.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
}

// eventNotes keeps what repair tells.
type eventNotes struct {
	mu  sync.Mutex
	got []string
}

func (n *eventNotes) Normal(reason, message string)  { n.add(reason + " " + message) }
func (n *eventNotes) Warning(reason, message string) { n.add(reason + " " + message) }
func (n *eventNotes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

func (n *eventNotes) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, s)
}

// TestTheFleetBoundHoldingAHungNodeHasNotGivenUp: containerd under a real
// systemd, frozen, on a node whose only fleet slot (a Lease on a real API
// server) another node holds. Repair is held back and has not given up
// for as long as the bound holds, so the fence waits (issue 48: "given
// up" means tried); once the slot is free, repair restarts containerd
// through systemd, and a wait later, the runtime still silent, it has
// given up. The Repairer runs in the test, on the real clock, with the
// agent's view (the condition, the silence) given by the test.
func TestTheFleetBoundHoldingAHungNodeHasNotGivenUp(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	systemd.Require(t)
	ctx := context.Background()
	cp := hangwatch.SharedControlPlane(t)
	ns := hangwatch.UniqueNode("hw-fleet-hold")
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	fs := repair.FleetSettings{MaxRestarts: 1, Window: time.Hour, Namespace: ns}
	other := &repair.LeaseSlots{Store: adminLeases{cp.Admin}, Node: "other-node", Clock: clock.RealClock{}}
	if ok, why, err := other.Acquire(ctx, repair.TargetRuntime, fs); !ok || err != nil {
		t.Fatalf("another node takes the slot: %v, %q, %v", ok, why, err)
	}
	c, sd := containerd.StartUnderSystemdT(t, 1, 1)
	var mu sync.Mutex
	var frozen time.Time
	hung := func() bool { mu.Lock(); defer mu.Unlock(); return !frozen.IsZero() }
	notes, metrics := &eventNotes{}, repair.NewMetrics()
	r := repair.New(repair.Options{
		Settings: repair.Settings{Enabled: true, RestartRuntimeAfter: 5 * time.Second, MaxRestartsPerHour: 3, RuntimeUnit: containerd.Unit,
			SystemdSocket: sd.Socket(), StateFile: filepath.Join(t.TempDir(), "budget.json"), Fleet: fs},
		Clock: clock.RealClock{},
		Conditions: func() []nodelink.Condition {
			if !hung() {
				return nil
			}
			return []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "VersionHung"}}
		},
		Unanswered: map[repair.Target]nodelink.Silence{repair.TargetRuntime: func() (string, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if frozen.IsZero() {
				return "", 0
			}
			return "Version", time.Since(frozen)
		}},
		Fleet:     &repair.LeaseSlots{Store: adminLeases{cp.Admin}, Node: "hung-node", Clock: clock.RealClock{}},
		CRISocket: "unix://" + c.Socket, Metrics: metrics, Notify: notes,
	})
	pid0 := c.PID()
	thaw := harness.Freeze(t, c)
	defer thaw()
	mu.Lock()
	frozen = time.Now()
	mu.Unlock()
	outcome := func(o string) float64 { return metrics.Tally().Repairs[repair.TargetRuntime][o] }
	// step judges as the repair process does, about each second, until
	// until holds
	step := func(until func() bool, limit time.Duration, what string) {
		t.Helper()
		harness.Eventually(t, limit, what, func() bool { r.Step(ctx); return until() },
			harness.Every(time.Second), harness.Explaining(func() string { return fmt.Sprintf("events %q", notes.all()) }))
	}
	step(func() bool { return outcome(repair.OutcomeFleetBound) >= 1 }, time.Minute, "held back by the fleet's bound")
	held := time.Now()
	step(func() bool { // held through the next ask too
		if up, why := r.GivenUp(repair.TargetRuntime); up || !strings.Contains(why, "repair.fleet.maxRestarts (1)") {
			t.Fatalf("held by the fleet's bound %s into the hang: GivenUp = %v (%s); want false, naming the bound", time.Since(frozen).Round(time.Second), up, why)
		}
		return time.Since(held) > 70*time.Second
	}, 90*time.Second, "the bound to hold for 70 s")
	if n := outcome(repair.OutcomeFleetBound); n < 1 {
		t.Errorf("fleet-bound %v", n)
	}
	if pid := c.PID(); pid != pid0 || outcome(repair.OutcomeRestarted) != 0 {
		t.Fatalf("containerd's main PID %d -> %d, restarted %v, while the bound held", pid0, pid, outcome(repair.OutcomeRestarted))
	}
	if err := cp.Admin.CoordinationV1().Leases(ns).Delete(ctx, repair.SlotName(0), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err) // the bound lets go
	}
	step(func() bool { return outcome(repair.OutcomeRestarted) >= 1 }, 90*time.Second, "restarted once the slot was free")
	if up, _ := r.GivenUp(repair.TargetRuntime); up {
		t.Errorf("given up at the restart, before a wait")
	}
	restarted := time.Now()
	step(func() bool { up, _ := r.GivenUp(repair.TargetRuntime); return up }, 15*time.Second, "given up a wait after the restart")
	if d := time.Since(restarted); d < 4*time.Second {
		t.Errorf("given up %s after the restart, before its wait (5s)", d)
	}
	harness.Eventually(t, time.Minute, "systemd to start containerd again", func() bool { pid := c.PID(); return pid != 0 && pid != pid0 })
}

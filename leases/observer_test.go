package leases

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	clk    *testclock.FakeClock
	obs    *Observer
}

func newFixture(t *testing.T, durationSeconds int32) *fixture {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: Namespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To(durationSeconds),
			RenewTime: &metav1.MicroTime{Time: t0.Add(-3 * time.Second)}}}
	clk := testclock.NewFakeClock(t0)
	client := fake.NewClientset(lease)
	return &fixture{t: t, client: client, clk: clk,
		obs: NewObserver(clientsetLeases{client}, Config{Node: "node-a", Grace: 50 * time.Second}, clk)}
}

func (f *fixture) renew() {
	f.t.Helper()
	l, err := f.client.CoordinationV1().Leases(Namespace).Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: f.clk.Now()}
	if _, err := f.client.CoordinationV1().Leases(Namespace).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) observe() Observation {
	f.t.Helper()
	o, err := f.obs.Observe(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

func TestRenewAgeFollowsChangesOfRenewTime(t *testing.T) {
	f := newFixture(t, 40)
	o := f.observe()
	if !o.Found || o.Holder != "node-a" || o.RenewInterval != 10*time.Second || o.RenewAge != 3*time.Second {
		t.Fatalf("first read: %+v (the first age comes from the node clock)", o)
	}
	f.clk.Step(2 * time.Second)
	if o = f.observe(); o.RenewAge != 5*time.Second || o.MissedRenewals() != 0 {
		t.Fatalf("unchanged: %+v", o)
	}
	f.clk.Step(5 * time.Second)
	f.renew()
	f.clk.Step(time.Second)
	if o = f.observe(); o.RenewAge != time.Second {
		t.Fatalf("after a renewal: age %v, want 1s", o.RenewAge)
	}
	f.clk.Step(21 * time.Second)
	o = f.observe()
	if o.MissedRenewals() != 2 || o.SecondsLeft() != 28 {
		t.Fatalf("22s without renewal: missed %d, left %v", o.MissedRenewals(), o.SecondsLeft())
	}
	fields := o.Fields()
	if fields.RenewAgeSeconds != 22.0 || fields.GraceSeconds != 50.0 || fields.LeaseDurationSeconds != 40 {
		t.Fatalf("fields %v", fields)
	}
}

func TestAChangeSeenLateIsPlacedSinceTheLastRead(t *testing.T) {
	f := newFixture(t, 40)
	f.observe()
	f.clk.Step(2 * time.Second)
	f.renew()
	// The node clock says the renewal was 0s ago, but suppose it runs
	// 30s behind: the age is still bounded by the time since the last read.
	l, _ := f.client.CoordinationV1().Leases(Namespace).Get(context.Background(), "node-a", metav1.GetOptions{})
	l.Spec.RenewTime = &metav1.MicroTime{Time: f.clk.Now().Add(-30 * time.Second)}
	_, _ = f.client.CoordinationV1().Leases(Namespace).Update(context.Background(), l, metav1.UpdateOptions{})
	if o := f.observe(); o.RenewAge != 2*time.Second {
		t.Fatalf("age %v, want the read period (2s)", o.RenewAge)
	}
}

func TestMissingLease(t *testing.T) {
	f := newFixture(t, 40)
	_ = f.client.CoordinationV1().Leases(Namespace).Delete(context.Background(), "node-a", metav1.DeleteOptions{})
	if o := f.observe(); o.Found || o.Fields().Found {
		t.Fatalf("got %+v", o)
	}
}

func TestGraceByVersion(t *testing.T) {
	for _, c := range []struct {
		minor int
		want  time.Duration
	}{{31, 40 * time.Second}, {32, 50 * time.Second}, {34, 50 * time.Second}} {
		if got := Grace(1, c.minor); got != c.want {
			t.Errorf("1.%d: %v, want %v", c.minor, got, c.want)
		}
	}
}

// TestMissingLeaseCountsAsUnrenewedSinceFirstMissed: a Lease that does not
// exist yet (a kubelet just started) is not a missed renewal at once.
func TestMissingLeaseCountsAsUnrenewedSinceFirstMissed(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	client := fake.NewSimpleClientset()
	o := NewObserver(clientsetLeases{client}, Config{Node: "n1", Grace: 50 * time.Second}, clk)
	for _, step := range []struct {
		after  time.Duration
		missed int
	}{{0, 0}, {15 * time.Second, 1}, {10 * time.Second, 2}} {
		clk.Step(step.after)
		obs, err := o.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if obs.Found || obs.MissedRenewals() != step.missed {
			t.Fatalf("after %v more: found %v, missed %d, want %d", step.after, obs.Found, obs.MissedRenewals(), step.missed)
		}
	}
}

// TestFailedAndSlowReads: a failed read comes back unreadable, with its
// class and the last good reading; every reading says how long it took.
func TestFailedAndSlowReads(t *testing.T) {
	f := newFixture(t, 40)
	answer := error(nil)
	slow := time.Duration(0)
	f.client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		f.clk.Step(slow) // the read takes this long
		return answer != nil, nil, answer
	})
	read := func(answerNext error, slowNext time.Duration) Observation {
		answer, slow = answerNext, slowNext
		return f.obs.Read(context.Background(), nil)
	}
	if o := read(nil, 0); !o.Readable || o.ReadLatency != 0 || o.ReadError != "" {
		t.Fatalf("first read: %+v", o)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-a", errors.New("no RBAC"))
	if o := read(forbidden, 0); o.Readable || o.ReadError != "forbidden" || !o.Found || o.Holder != "node-a" || o.Grace != 50*time.Second {
		t.Fatalf("a forbidden read: %+v, want unreadable with the last good reading", o)
	}
	if o := read(context.DeadlineExceeded, 0); o.ReadError != "timeout" {
		t.Fatalf("a timed-out read: %+v", o)
	}
	if o := read(nil, 3*time.Second); !o.Readable || o.ReadLatency != 3*time.Second || o.ReadError != "" {
		t.Fatalf("a slow read: %+v", o)
	}
}

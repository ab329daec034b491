package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
)

// TestTheFleetBoundHoldsOnARealAPIServer: 12 nodes whose runtimes hang
// together each ask, at once, for a restart slot as hangwatch's
// ServiceAccount, with the repair overlay's RBAC and admission policy
// (rbac-fleet.yaml) on a real API server: exactly fleetMaxRestarts (5) get
// one, the others are told why, and asking again finds every slot taken.
// The ServiceAccount may not create a Lease of another name.
func TestTheFleetBoundHoldsOnARealAPIServer(t *testing.T) {
	harness.Parallel(t)
	cp := harness.SharedControlPlane(t)
	cp.Kubectl(t, "apply", "-f", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "repair", "rbac-fleet.yaml"))
	fs := repair.FleetSettings{MaxRestarts: 5, Window: 10 * time.Minute, Namespace: "kube-system"}
	t.Cleanup(func() {
		for i := range fs.MaxRestarts {
			_ = cp.Admin.CoordinationV1().Leases(fs.Namespace).Delete(context.Background(), repair.SlotName(i), metav1.DeleteOptions{})
		}
	})
	kc, err := cp.Kubeconfig("hangwatch-fleet", "system:serviceaccount:kube-system:hangwatch",
		"system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := apiclient.RESTConfig(kc, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	harness.Eventually(t, time.Minute, "the slots-only policy to refuse another Lease name", func() bool {
		other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: fs.Namespace, Name: "hw-not-a-slot-" + fmt.Sprint(time.Now().UnixNano())}}
		_, last = client.CreateLease(context.Background(), other)
		if last == nil {
			_ = cp.Admin.CoordinationV1().Leases(fs.Namespace).Delete(context.Background(), other.Name, metav1.DeleteOptions{})
		}
		return last != nil && strings.Contains(last.Error(), "hangwatch may write only its repair slot Leases")
	}, harness.Explaining(func() string { return fmt.Sprint(last) }))

	var granted atomic.Int32
	var wg sync.WaitGroup
	nodes := make([]*repair.LeaseSlots, 12)
	for i := range nodes {
		nodes[i] = &repair.LeaseSlots{Store: client, Node: fmt.Sprintf("fleet-node-%d", i), Clock: clock.RealClock{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, why, err := nodes[i].Acquire(context.Background(), repair.TargetRuntime, fs)
			switch {
			case err != nil:
				t.Errorf("node %d: %v", i, err)
			case ok:
				granted.Add(1)
			case !strings.Contains(why, "repair.fleet.maxRestarts (5)"):
				t.Errorf("node %d held back saying %q", i, why)
			}
		}()
	}
	wg.Wait()
	if n := granted.Load(); n != int32(fs.MaxRestarts) {
		t.Fatalf("%d of 12 nodes got a restart slot at once, want %d", n, fs.MaxRestarts)
	}
	for i, n := range nodes {
		if ok, _, err := n.Acquire(context.Background(), repair.TargetRuntime, fs); ok || err != nil {
			t.Errorf("node %d asking again within the window: %v, %v; want held back", i, ok, err)
		}
	}
}

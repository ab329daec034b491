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

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestRepairSlotWritesAreHeldToTheTokensNode applies the repair overlay's
// slot RBAC and policy (rbac-fleet.yaml) for real: hangwatch's
// ServiceAccount, with a token bound to a pod on its node, takes a slot as
// repair.LeaseSlots does (create, then update once the window has passed
// on its clock); the same token is refused a slot in another node's name,
// a duration over an hour or under a minute, an owner reference or a
// finalizer, and a token bound to no pod is refused any slot. Each
// refusal names its field.
func TestRepairSlotWritesAreHeldToTheTokensNode(t *testing.T) {
	harness.Parallel(t)
	cp := hangwatch.SharedControlPlane(t)
	ctx := context.Background()
	root := harness.ModuleRoot()
	cp.Kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "overlays", "daemonset", "serviceaccount.yaml"))
	cp.Kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "overlays", "repair", "rbac-fleet.yaml"))
	own := hangwatch.UniqueNode("slots-own")
	hangwatch.CreateNode(t, cp, own)
	// The shipped Role names the slots in kube-system: each test's slots
	// live in a namespace of their own, with the same rules bound there
	// (the policy holds in every namespace), so that tests side by side
	// do not take each other's.
	ns := slotNamespace(ctx, t, cp)
	token := cp.NodeBoundToken(t, "kube-system", "hangwatch", own)
	store := leaseStoreFor(t, cp.TokenKubeconfig(t, token))
	fs := repair.FleetSettings{MaxRestarts: 1, Window: 10 * time.Minute, Namespace: ns}

	var err error
	// Until the API server has loaded the policy, another node's name passes.
	harness.Eventually(t, time.Minute, "the slots policy to refuse another node's name", func() bool {
		lease := slotLease(ns, "hangwatch-repair-slot-probe-"+fmt.Sprint(time.Now().UnixNano()), "elsewhere/runtime", 600)
		_, err = store.CreateLease(ctx, lease)
		if err == nil {
			_ = cp.Admin.CoordinationV1().Leases(ns).Delete(ctx, lease.Name, metav1.DeleteOptions{})
		}
		return err != nil && strings.Contains(err.Error(), "spec.holderIdentity")
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return fmt.Sprint(err) }))

	for i, c := range []struct {
		name   string
		holder string
		secs   int32
		owner  bool
		want   string
	}{
		{"another node's name", "elsewhere/runtime", 600, false, "spec.holderIdentity"},
		{"its node's name for an unknown target", own + "/everything", 600, false, "spec.holderIdentity"},
		{"no holder", "", 600, false, "spec.holderIdentity"},
		{"a day", own + "/runtime", 86400, false, "spec.leaseDurationSeconds"},
		{"ten seconds", own + "/runtime", 10, false, "spec.leaseDurationSeconds"},
		{"an owner reference", own + "/runtime", 600, true, "metadata.ownerReferences"},
		{"a finalizer", own + "/runtime", 600, false, "metadata.finalizers"},
	} {
		lease := slotLease(ns, fmt.Sprintf("hangwatch-repair-slot-case-%d", i), c.holder, c.secs)
		if c.owner {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "5f0c2a0e-0000-4000-8000-000000000002"}}
		}
		if c.want == "metadata.finalizers" {
			lease.Finalizers = []string{"example.com/hold"}
		}
		if _, err := store.CreateLease(ctx, lease); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a slot with %s: %v; want the policy's denial naming %s", c.name, err, c.want)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	unbound := leaseStoreFor(t, cp.TokenKubeconfig(t, cp.Token(t, "kube-system", "hangwatch", nil)))
	if _, err := unbound.CreateLease(ctx, slotLease(ns, "hangwatch-repair-slot-unbound", own+"/runtime", 600)); err == nil ||
		!strings.Contains(err.Error(), "bound to a pod on a node") {
		t.Errorf("a token bound to no pod: %v; want the policy's denial", err)
	}

	// The product's own writes, through the same token: a create, then,
	// once the window has passed on its clock, an update of the slot.
	clk := clocktesting.NewFakePassiveClock(time.Now())
	slots := &repair.LeaseSlots{Store: store, Node: own, Clock: clk}
	if ok, why, err := slots.Acquire(ctx, repair.TargetRuntime, fs); !ok || err != nil {
		t.Fatalf("repair taking a free slot in its own node's name: %v, %q, %v", ok, why, err)
	}
	if ok, _, err := slots.Acquire(ctx, repair.TargetKubelet, fs); ok || err != nil {
		t.Fatalf("asking again within the window: %v, %v; want held back", ok, err)
	}
	clk.SetTime(clk.Now().Add(fs.Window + time.Second))
	if ok, why, err := slots.Acquire(ctx, repair.TargetKubelet, fs); !ok || err != nil {
		t.Fatalf("retaking the slot once the window has passed: %v, %q, %v", ok, why, err)
	}
	l, err := cp.Admin.CoordinationV1().Leases(ns).Get(ctx, repair.SlotName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *l.Spec.HolderIdentity; got != own+"/kubelet" {
		t.Errorf("the slot's holder %q, want %s/kubelet", got, own)
	}
	// A stolen token cannot take a slot in another node's name either.
	liar := &repair.LeaseSlots{Store: store, Node: "elsewhere", Clock: clk}
	clk.SetTime(clk.Now().Add(fs.Window + time.Second))
	if _, _, err := liar.Acquire(ctx, repair.TargetRuntime, fs); err == nil { // its first look only records the slot
		clk.SetTime(clk.Now().Add(fs.Window + time.Second))
		if ok, _, err := liar.Acquire(ctx, repair.TargetRuntime, fs); ok || err == nil || !strings.Contains(err.Error(), "spec.holderIdentity") {
			t.Errorf("a slot taken in another node's name with this node's token: %v, %v; want the policy's denial", ok, err)
		}
	} else {
		t.Fatal(err)
	}
}

// TestTheFleetBoundHoldsWithNodeBoundTokens: 12 nodes whose runtimes hang
// together, each with hangwatch's ServiceAccount token bound to its own
// pod, ask at once for a restart slot, with the repair overlay's RBAC and
// slots policy on a real API server: exactly fleetMaxRestarts (5) get one,
// each written in its own node's name, the others are told why, asking
// again finds every slot taken, and no Lease of another name is admitted.
func TestTheFleetBoundHoldsWithNodeBoundTokens(t *testing.T) {
	harness.Parallel(t)
	cp := hangwatch.SharedControlPlane(t)
	ctx := context.Background()
	root := harness.ModuleRoot()
	cp.Kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "overlays", "daemonset", "serviceaccount.yaml"))
	cp.Kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "overlays", "repair", "rbac-fleet.yaml"))
	ns := slotNamespace(ctx, t, cp)
	fs := repair.FleetSettings{MaxRestarts: 5, Window: 10 * time.Minute, Namespace: ns}
	nodes := make([]*repair.LeaseSlots, 12)
	for i := range nodes {
		name := hangwatch.UniqueNode("fleet-bound")
		hangwatch.CreateNode(t, cp, name)
		nodes[i] = &repair.LeaseSlots{Store: leaseStoreFor(t, cp.TokenKubeconfig(t, cp.NodeBoundToken(t, "kube-system", "hangwatch", name))),
			Node: name, Clock: clock.RealClock{}}
	}
	// the policy is loaded once a slot in another node's name is refused
	var err error
	harness.Eventually(t, time.Minute, "the slots policy to refuse another node's name", func() bool {
		_, err = nodes[0].Store.CreateLease(ctx, slotLease(ns, "hangwatch-repair-slot-probe-"+fmt.Sprint(time.Now().UnixNano()), "elsewhere/runtime", 600))
		return err != nil && strings.Contains(err.Error(), "spec.holderIdentity")
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return fmt.Sprint(err) }))
	var granted atomic.Int32
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, why, err := n.Acquire(ctx, repair.TargetRuntime, fs)
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
	names := map[string]bool{}
	for _, n := range nodes {
		names[n.Node+"/"+string(repair.TargetRuntime)] = true
	}
	for i := range fs.MaxRestarts {
		l, err := cp.Admin.CoordinationV1().Leases(ns).Get(ctx, repair.SlotName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !names[*l.Spec.HolderIdentity] {
			t.Errorf("slot %d held by %q, not one of the fleet's nodes", i, *l.Spec.HolderIdentity)
		}
	}
	for i, n := range nodes {
		if ok, _, err := n.Acquire(ctx, repair.TargetRuntime, fs); ok || err != nil {
			t.Errorf("node %d asking again within the window: %v, %v; want held back", i, ok, err)
		}
	}
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hw-not-a-slot"}}
	if _, err := nodes[0].Store.CreateLease(ctx, other); err == nil || !strings.Contains(err.Error(), "hangwatch may write only its repair slot Leases") {
		t.Errorf("a Lease of another name: %v, want the slots policy's denial", err)
	}
}

// slotNamespace makes a namespace of the test's own with the shipped
// slot Role (rbac-fleet.yaml's rules) bound to hangwatch's ServiceAccount,
// and returns its name.
func slotNamespace(ctx context.Context, t *testing.T, cp *harness.ControlPlane) string {
	t.Helper()
	ns := hangwatch.UniqueNode("hw-slots")
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	shipped, err := cp.Admin.RbacV1().Roles("kube-system").Get(ctx, "hangwatch:repair-slots", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rbac := cp.Admin.RbacV1()
	_, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "hangwatch:repair-slots"}, Rules: shipped.Rules}, metav1.CreateOptions{})
	if err == nil {
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hangwatch:repair-slots"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "hangwatch:repair-slots"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kube-system", Name: "hangwatch"}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"create", "update"} {
		cp.WaitAuthorized(t, harness.ServiceAccountUser("kube-system", "hangwatch"), authorizationReview(ns, verb, repair.SlotName(0)))
	}
	return ns
}

// leaseStoreFor is hangwatch's own API client (repair.LeaseStore) for a kubeconfig.
func leaseStoreFor(t *testing.T, kubeconfig string) *apiclient.Client {
	t.Helper()
	cfg, err := apiclient.RESTConfig(kubeconfig, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	c, err := apiclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// slotLease is a slot Lease as repair.LeaseSlots writes it; holder "" leaves it out.
func slotLease(ns, name, holder string, seconds int32) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(seconds), AcquireTime: &now, RenewTime: &now}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	return l
}

// authorizationReview asks for verb on the Lease name in ns.
func authorizationReview(ns, verb, name string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: name}}
}

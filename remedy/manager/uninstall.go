package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/remedy"
)

const (
	// uninstallPoll is how often the guard reads its Deployment, and the
	// time between the uninstall's passes over the Nodes.
	uninstallPoll = 2 * time.Second
	// holdEvery is how many polls apart a refused hold is tried again.
	holdEvery = 15
	// uninstallLimit bounds the passes: the ServiceAccount's tokens stop
	// working a minute after its deletion (the API server's leeway), and
	// an uninstall must not hang on a Node it cannot write.
	uninstallLimit = 45 * time.Second
)

var uninstallPatch = metav1.PatchOptions{FieldManager: "hangwatch-remedy"}

// uninstallGuard holds the install's objects with UninstallFinalizer and,
// once its Deployment is deleted, stops the controller, takes hangwatch's
// marks off every Node (remedy.LeftOn) and lets the objects go.
type uninstallGuard struct {
	m    *Manager
	held []heldObject // the Deployment last
	// started is closed when the Deployment's deletion is seen; done when
	// the guard returns.
	started, done chan struct{}
}

func (m *Manager) newUninstallGuard() *uninstallGuard {
	g := &uninstallGuard{m: m, started: make(chan struct{}), done: make(chan struct{})}
	if m.o.Uninstall != "" {
		g.held = heldObjects(m.o.Client, m.o.Election.Namespace, m.o.Uninstall)
	}
	return g
}

// uninstalling tells whether the Deployment's deletion was seen.
func (g *uninstallGuard) uninstalling() bool {
	select {
	case <-g.started:
		return true
	default:
		return false
	}
}

// run guards until ctx ends or the uninstall is done; stopActing stops
// the controller, which has stopped once actStopped is closed.
func (g *uninstallGuard) run(ctx context.Context, stopActing func(), actStopped <-chan struct{}) {
	defer close(g.done)
	if len(g.held) == 0 || !g.waitForDeletion(ctx) {
		return
	}
	close(g.started)
	klog.InfoS("Uninstalling: stopped acting; taking hangwatch's taints, fence annotations and conditions off the Nodes",
		"deployment", g.deployment().what)
	stopActing()
	select {
	case <-actStopped:
	case <-ctx.Done():
		return
	}
	g.cleanNodes(ctx)
	g.deleteLeases(ctx)
	g.releaseAll(ctx)
}

// deleteLeases deletes the leader election's Lease and the action
// budget's: they would outlive the install, holding nothing.
func (g *uninstallGuard) deleteLeases(ctx context.Context) {
	e := g.m.o.Election
	leases := g.m.o.Client.CoordinationV1().Leases(e.Namespace)
	for _, name := range []string{e.Name, e.Name + "-actions"} {
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Uninstall: cannot delete the Lease; it stays, holding nothing", "lease", e.Namespace+"/"+name)
		}
	}
}

func (g *uninstallGuard) deployment() heldObject { return g.held[len(g.held)-1] }

// waitForDeletion holds the install's objects and polls the Deployment
// until it is being deleted (true) or ctx ends (false). A Deployment
// never found is no install of ours (hangwatch-remedy run by hand):
// said once, and nothing is held.
func (g *uninstallGuard) waitForDeletion(ctx context.Context) bool {
	t := g.m.o.Clock.NewTicker(uninstallPoll)
	defer t.Stop()
	held, seen, said := false, false, false
	for tick := 0; ; tick++ {
		d, err := g.deployment().get(ctx)
		switch {
		case err == nil && d.GetDeletionTimestamp() != nil, apierrors.IsNotFound(err) && seen:
			return true
		case err == nil:
			seen = true
		case ctx.Err() != nil:
			return false
		case !said:
			klog.ErrorS(err, "Cannot read the install's Deployment: an uninstall will leave hangwatch's marks on the Nodes")
			said = true
		}
		if seen && !held && tick%holdEvery == 0 {
			held = g.holdAll(ctx, !said)
			said = said || !held
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
	}
}

// holdAll holds the install (held.go): the foregroundDeletion finalizer
// on the ServiceAccount, the ClusterRoleBinding and the ClusterRole, the
// guard Lease they own, and UninstallFinalizer on the Deployment. It says
// a refusal when told to.
func (g *uninstallGuard) holdAll(ctx context.Context, say bool) bool {
	err := func() error {
		for _, h := range g.held {
			o, err := h.hold(ctx)
			if err != nil {
				return err
			}
			if h.ref == nil {
				continue
			}
			if err := ensureGuard(ctx, g.m.o.Client, g.m.o.Election.Namespace, guardName(g.m.o.Uninstall, h.kind), h.ref(o)); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		if say {
			klog.ErrorS(err, "Cannot hold the install: an uninstall will leave hangwatch's marks on the Nodes")
		}
		return false
	}
	klog.InfoS("Holding the install until an uninstall has cleaned the Nodes", "finalizer", UninstallFinalizer,
		"deployment", g.deployment().what, "guards", "lease/"+g.m.o.Election.Namespace+"/"+guardName(g.m.o.Uninstall, "*"))
	return true
}

// cleanNodes passes over the Nodes until two passes in a row find
// nothing of hangwatch's (an agent still stopping may write once more),
// or uninstallLimit has passed.
func (g *uninstallGuard) cleanNodes(ctx context.Context) {
	clk := g.m.o.Clock
	t := clk.NewTicker(uninstallPoll)
	defer t.Stop()
	deadline := clk.Now().Add(uninstallLimit)
	var err error
	for quiet := 0; quiet < 2; {
		var found int
		found, err = g.cleanPass(ctx)
		if err == nil && found == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 || !clk.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
	if err != nil {
		klog.ErrorS(err, "Uninstall: hangwatch's marks are left on Nodes; remove them by hand (docs/install.md, Uninstall)")
	}
}

// cleanPass takes hangwatch's marks off each Node and returns how many
// Nodes had some.
func (g *uninstallGuard) cleanPass(ctx context.Context) (int, error) {
	nodes, err := g.m.o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list the Nodes: %w", err)
	}
	types := g.conditionTypes()
	var errs []error
	found := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		l, err := remedy.LeftOn(n, types)
		if err != nil || l.Empty() {
			errs = append(errs, err)
			continue
		}
		found++
		errs = append(errs, g.cleanNode(ctx, n, l, types))
	}
	return found, errors.Join(errs...)
}

// cleanNode removes l from n: the conditions first (the admission policy
// lets hangwatch-remedy lift its taints only once the condition is not
// True), then, on the Node that patch returned, the taints and
// annotations.
func (g *uninstallGuard) cleanNode(ctx context.Context, n *corev1.Node, l remedy.Leftovers, condTypes []string) error {
	nodes := g.m.o.Client.CoreV1().Nodes()
	name, what := n.Name, l.What
	if l.Status != nil {
		var err error
		if n, err = nodes.Patch(ctx, name, types.JSONPatchType, l.Status, uninstallPatch, "status"); err != nil {
			return fmt.Errorf("take hangwatch's conditions off node %s: %w", name, err)
		}
		if l, err = remedy.LeftOn(n, condTypes); err != nil {
			return err
		}
	}
	if l.Node != nil {
		if _, err := nodes.Patch(ctx, name, types.JSONPatchType, l.Node, uninstallPatch); err != nil {
			return fmt.Errorf("take hangwatch's taints and annotations off node %s: %w", name, err)
		}
	}
	klog.InfoS("Uninstall: took hangwatch's marks off the node", "node", name, "removed", what)
	return nil
}

// conditionTypes are the types whose conditions and taints an uninstall
// removes: hangwatch's own and the policy's.
func (g *uninstallGuard) conditionTypes() []string {
	types := slices.Clone(remedy.OwnedConditionTypes)
	for _, c := range g.m.policy.get().Conditions {
		if !slices.Contains(types, c.Type) {
			types = append(types, c.Type)
		}
	}
	return types
}

// releaseAll lets the Deployment go (the garbage collector then deletes
// its pods, this one among them), then the guard Leases (the collector
// then lets the ServiceAccount and the RBAC go), each tried again every
// poll until it is done. The guards are let go on a context of their own:
// this pod's SIGTERM may come between.
func (g *uninstallGuard) releaseAll(ctx context.Context) {
	t := g.m.o.Clock.NewTicker(uninstallPoll)
	defer t.Stop()
	guardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	ns := g.m.o.Election.Namespace
	type step struct {
		what string
		ctx  context.Context
		do   func(context.Context) error
	}
	steps := []step{{g.deployment().what, ctx, g.deployment().release}}
	for _, h := range g.held {
		if h.ref != nil {
			name := guardName(g.m.o.Uninstall, h.kind)
			steps = append(steps, step{"lease/" + ns + "/" + name, guardCtx, func(ctx context.Context) error {
				return releaseGuard(ctx, g.m.o.Client, ns, name)
			}})
		}
	}
	for _, s := range steps {
		for said := false; ; said = true {
			err := s.do(s.ctx)
			if err == nil || apierrors.IsNotFound(err) {
				break
			}
			if !said {
				klog.ErrorS(err, "Uninstall: cannot let the install go; trying again", "object", s.what)
			}
			select {
			case <-s.ctx.Done():
				return
			case <-t.C():
			}
		}
	}
	klog.InfoS("Uninstall done: the install let go", "finalizer", UninstallFinalizer)
}

package remedy

import (
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// fullResync is how often the controller plans every node even when none
// changed: a safety net under the informer's events and the due times.
const fullResync = 5 * time.Minute

// view is what the controller planned of each node, so that a pass plans
// only the nodes that changed (the informer's events, Changed), whose wait
// fell due, or that want an action (taken, held back or under way), and
// not the whole fleet every second.
type view struct {
	mu    sync.Mutex
	dirty map[string]bool // told changed since the last pass

	nodes  map[string]*nodeState
	policy *Policy // the policy the view was planned with: another plans everything
	fullAt time.Time
	totals Plan // Matching and Unhealthy over every node
}

// nodeState is one node's last plan.
type nodeState struct {
	part   nodePlan
	node   *corev1.Node
	wakeAt time.Time // zero: none
	active bool      // its last plan wanted an action: planned again every pass
}

func newView() *view {
	return &view{dirty: map[string]bool{}, nodes: map[string]*nodeState{}}
}

// changed marks a node to plan at the next pass.
func (v *view) changed(name string) {
	v.mu.Lock()
	v.dirty[name] = true
	v.mu.Unlock()
}

// due names the nodes to plan at now, and whether to plan them all.
func (v *view) due(p *Policy, now time.Time) (names []string, all bool) {
	v.mu.Lock()
	dirty := v.dirty
	v.dirty = map[string]bool{}
	v.mu.Unlock()
	if p != v.policy || v.fullAt.IsZero() || now.Sub(v.fullAt) >= fullResync {
		return nil, true
	}
	for name, st := range v.nodes {
		if st.active || (!st.wakeAt.IsZero() && !now.Before(st.wakeAt)) {
			dirty[name] = true
		}
	}
	for name := range dirty {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, false
}

// nodesToPlan reads the nodes due from lister (the informer's cache);
// a node it no longer has is forgotten.
func (c *Controller) nodesToPlan(p *Policy, now time.Time) ([]*corev1.Node, bool, error) {
	names, all := c.view.due(p, now)
	if all || !c.o.Watched {
		nodes, err := c.o.Nodes.List()
		return nodes, true, err
	}
	out := make([]*corev1.Node, 0, len(names))
	for _, name := range names {
		n, err := c.o.Nodes.Get(name)
		switch {
		case apierrors.IsNotFound(err):
			c.view.forget(name)
			c.clocks.Forget(name)
		case err != nil:
			return nil, false, err
		default:
			out = append(out, n)
		}
	}
	return out, false, nil
}

// plan plans nodes (every node when all) into the view and returns the
// plan: the actions of the nodes planned, the rows and totals of all.
func (v *view) plan(p *Policy, nodes []*corev1.Node, all bool, clocks *Clocks, now time.Time) Plan {
	if all {
		v.nodes, v.totals, v.policy, v.fullAt = map[string]*nodeState{}, Plan{}, p, now
	}
	sel := p.parsedSelector()
	for _, n := range nodes {
		if old := v.nodes[n.Name]; old != nil {
			v.totals.count(old.part, -1)
		}
		part := p.planNode(sel, n, clocks, now)
		st := &nodeState{part: part, node: n}
		if part.wake > 0 {
			st.wakeAt = now.Add(part.wake)
		}
		v.nodes[n.Name] = st
		v.totals.count(part, 1)
	}
	plan := Plan{Withheld: map[string][]Action{}, Matching: v.totals.Matching, Unhealthy: v.totals.Unhealthy, Fencing: v.totals.Fencing}
	plan.Limit, _ = p.unhealthyLimit(plan.Matching)
	planned := map[string]bool{}
	for _, n := range nodes {
		planned[n.Name] = true
	}
	for _, name := range v.sortedNames() {
		st := v.nodes[name]
		if !planned[name] {
			plan.Rows = append(plan.Rows, st.part.rows...)
			continue
		}
		first := len(plan.Rows)
		plan.addNode(p, st.node, st.part)
		st.part.rows = slices.Clone(plan.Rows[first:]) // as filed: with the action taken or held
		st.active = slices.ContainsFunc(st.part.acts, func(a *Action) bool { return a != nil })
	}
	return plan
}

func (v *view) sortedNames() []string {
	names := make([]string, 0, len(v.nodes))
	for name := range v.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (v *view) forget(name string) {
	if st := v.nodes[name]; st != nil {
		v.totals.count(st.part, -1)
		delete(v.nodes, name)
		klog.V(2).InfoS("Node gone from the cache; forgotten", "node", name)
	}
}

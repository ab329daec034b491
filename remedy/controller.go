package remedy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/maintenance"
)

// NodeLister lists the nodes the controller sees (an informer's cache).
type NodeLister interface {
	List() ([]*corev1.Node, error)
	// Get reads one; an error IsNotFound when it is gone.
	Get(name string) (*corev1.Node, error)
}

// Options wire a Controller.
type Options struct {
	Client kubernetes.Interface
	Nodes  NodeLister
	// Policy returns the policy in effect (it may be reloaded).
	Policy   func() *Policy
	Recorder record.EventRecorder
	Metrics  *Metrics
	Clock    clock.WithTicker
	// Budget is the fleet's action budget; nil: one in memory.
	Budget *Budget
	// Resync is the time between passes; 1s when zero.
	Resync time.Duration
	// OtherFencers names a fencer at work on a node other than hangwatch
	// (a medik8s remediation), "" when none; nil: none is looked for.
	OtherFencers func(ctx context.Context, node string) (string, error)
	// Watched: Changed is told of every change to a Node (the informer's
	// events), so a pass plans only the nodes that changed, fell due or
	// want an action, and every node only each fullResync. Without it
	// every pass plans every node.
	Watched bool
}

// Controller applies plans: level-triggered, one pass every Resync.
type Controller struct {
	o      Options
	clocks *Clocks
	evict  *evictor
	mu     sync.Mutex
	warned map[string]bool // node/condition told of a held action, until it is no longer held
	told   []time.Time     // when each of the last minute's RemedyHeldBack Events went out
	// budgetBroken: the budget could not be read at the last pass.
	budgetBroken bool
	last         Plan
	view         *view
	leases       map[string]*leaseSighting // nodes the fence may soon ask
	// unfenceChecked: when each node's pods and VolumeAttachments were
	// last listed for the out-of-service taint's removal.
	unfenceChecked map[string]time.Time
}

// NewController returns a controller; nothing runs until Run.
func NewController(o Options) *Controller {
	if o.Resync == 0 {
		o.Resync = time.Second
	}
	if o.Budget == nil {
		o.Budget = NewBudget(nil, types.NamespacedName{}, "")
	}
	return &Controller{o: o, warned: map[string]bool{}, clocks: NewClocks(), view: newView(), leases: map[string]*leaseSighting{}, unfenceChecked: map[string]time.Time{},
		evict: newEvictor(o.Client, o.Clock, o.Metrics, o.Recorder)}
}

// Run plans and acts every Resync until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := c.o.Clock.NewTicker(c.o.Resync)
	defer t.Stop()
	for {
		c.Pass(ctx)
		select {
		case <-ctx.Done():
			c.evict.wait()
			return
		case <-t.C():
		}
	}
}

// Last is the last plan made.
func (c *Controller) Last() Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Changed tells the controller that a Node changed (added, updated or
// deleted): the next pass plans it.
func (c *Controller) Changed(name string) { c.view.changed(name) }

// Pass plans from the cache the nodes that changed, fell due or want an
// action (every node, without Options.Watched) and applies the plan, each
// action only if a fresh read of its Node from the API server plans it
// again. A pass with nothing to plan does nothing.
func (c *Controller) Pass(ctx context.Context) {
	p := c.o.Policy()
	now := c.o.Clock.Now()
	nodes, all, err := c.nodesToPlan(p, now)
	if err != nil {
		klog.ErrorS(err, "Listing nodes failed; no action this pass")
		return
	}
	if !all && len(nodes) == 0 {
		return
	}
	c.clocks.Observe(p, nodes, now, all)
	plan := c.view.plan(p, nodes, all, c.clocks, now)
	evicting := map[string]bool{}
	for _, a := range plan.Actions {
		if a.Kind == ActionEvict {
			evicting[a.Node] = true
		}
	}
	c.evict.retain(evicting)
	limited, room := 0, c.room(ctx, p, now)
	for _, a := range plan.Actions {
		if a.Kind == ActionEvict && !c.evict.due(a.Node) {
			continue // a pass is out, or backing off
		}
		if c.spends(p, a) { // read only as many Nodes as the budget may act on
			if room == 0 {
				limited++
				plan.Withheld[GuardRateLimit] = append(plan.Withheld[GuardRateLimit], a)
				continue
			}
			room--
		}
		live := c.confirm(ctx, p, a)
		if live == nil {
			continue
		}
		if !c.allow(ctx, p, a) {
			limited++
			plan.Withheld[GuardRateLimit] = append(plan.Withheld[GuardRateLimit], a)
			continue
		}
		c.apply(ctx, p, a, live)
	}
	c.watchLeases(ctx, plan)
	c.tellWithheld(plan, nodes)
	c.o.Metrics.observe(plan, limited)
	c.mu.Lock()
	c.last = plan
	c.mu.Unlock()
}

// confirm reads the action's Node from the API server, not the cache, and
// plans again from it: the live Node, if it asks for the same action.
func (c *Controller) confirm(ctx context.Context, p *Policy, a Action) *corev1.Node {
	live, err := c.o.Client.CoreV1().Nodes().Get(ctx, a.Node, metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "Reading the node before acting failed; tried again next pass", "node", a.Node, "action", a.Kind)
		return nil
	}
	now := c.o.Clock.Now()
	clocks := c.clocks.forNode(a.Node)
	clocks.Observe(p, []*corev1.Node{live}, now, false)
	var again *Action
	for _, cp := range p.Conditions {
		if cp.Type == a.Condition {
			_, again = p.decideOne(live, cp, clocks, now)
		}
	}
	if a.Condition == FenceRow {
		_, again, _ = p.decideFence(live, clocks, now)
	}
	optedOut := !a.Kind.undoes() && (live.Annotations[OptOutAnnotation] == "disabled" || maintenance.TrueOn(live) != "")
	if again == nil || again.Kind != a.Kind || optedOut {
		klog.InfoS("The node changed since the cache read it; not acting", "node", a.Node, "action", a.Kind, "condition", a.Condition)
		c.o.Metrics.actions.WithLabelValues(string(a.Kind), a.Condition, "changed").Inc()
		return nil
	}
	return c.confirmFence(ctx, a, live)
}

// confirmFence holds a fence action back until what only the API server
// can tell allows it; live otherwise.
func (c *Controller) confirmFence(ctx context.Context, a Action, live *corev1.Node) *corev1.Node {
	ok, why := true, ""
	switch a.Kind {
	case ActionFence:
		ok, why = c.fenceSafe(ctx, live)
	case ActionUnfence:
		if at, seen := c.unfenceChecked[a.Node]; seen && c.o.Clock.Since(at) < unfenceCheckEvery {
			return nil
		}
		c.unfenceChecked[a.Node] = c.o.Clock.Now()
		ok, why = c.recovered(ctx, a.Node)
	}
	if !ok {
		klog.V(2).InfoS("Fence action waits", "node", a.Node, "action", a.Kind, "why", why)
		return nil
	}
	return live
}

// spends tells whether a spends the fleet's budget: a new taint or a
// node's first eviction, out of a dry run.
func (c *Controller) spends(p *Policy, a Action) bool {
	return !p.DryRun && !a.Kind.undoes() && (a.Kind != ActionEvict || !c.evict.started(a.Node))
}

// room is how many actions the budget allows this pass; 0 when it cannot
// be read, which the metric and the log say (once until it can).
func (c *Controller) room(ctx context.Context, p *Policy, now time.Time) int {
	room, err := c.o.Budget.Room(ctx, p.MaxActionsPerMinute, now)
	c.o.Metrics.budgetReadable(err == nil)
	if err != nil && !c.budgetBroken {
		klog.ErrorS(err, "The action budget cannot be read; every new taint and eviction is held until it can")
	}
	c.budgetBroken = err != nil
	return room
}

// allow spends the fleet's budget on a new taint or a node's first
// eviction; an untaint, and an eviction already under way, are never held
// back. A budget that cannot be recorded holds the action (fails closed).
func (c *Controller) allow(ctx context.Context, p *Policy, a Action) bool {
	if a.Kind.undoes() || (a.Kind == ActionEvict && c.evict.started(a.Node)) {
		return true
	}
	if p.DryRun {
		return true // a dry run spends nothing
	}
	ok, err := c.o.Budget.Take(ctx, p.MaxActionsPerMinute, a, c.o.Clock.Now())
	if err != nil {
		klog.ErrorS(err, "The action budget could not be read or recorded; holding the action", "node", a.Node, "action", a.Kind)
	}
	return ok
}

func (c *Controller) apply(ctx context.Context, p *Policy, a Action, n *corev1.Node) {
	if p.DryRun {
		klog.InfoS("Dry run: would act", "node", a.Node, "action", a.Kind, "condition", a.Condition, "why", a.Why)
		c.o.Recorder.Eventf(n, corev1.EventTypeNormal, "RemedyDryRun", "would %s%s: %s", a.Kind, taintNote(a.Taint), a.Why)
		c.o.Metrics.actions.WithLabelValues(string(a.Kind), a.Condition, "dry_run").Inc()
		return
	}
	var err error
	switch a.Kind {
	case ActionTaint, ActionUntaint:
		err = c.setTaint(ctx, n, a)
	case ActionEvict:
		c.evict.start(ctx, n, a, p.EvictionFor(a.Condition), p.EvictionConcurrency)
		return
	case ActionFence, ActionOutOfService, ActionWithdraw, ActionUnfence:
		err = c.applyFence(ctx, p, a, n)
	}
	result := "done"
	if err != nil {
		result = "error"
		klog.ErrorS(err, "Action failed; tried again next pass", "node", a.Node, "action", a.Kind)
	} else if a.Kind == ActionTaint {
		c.clocks.Tainted(a.Node, a.Condition, c.o.Clock.Now())
	} else if a.Kind == ActionUntaint {
		c.clocks.Untainted(a.Node, a.Condition, c.o.Clock.Now())
	}
	c.o.Metrics.actions.WithLabelValues(string(a.Kind), a.Condition, result).Inc()
}

// setTaint adds or removes the action's taint with a JSON patch of
// spec.taints that holds only if the Node is still the one just read (its
// resourceVersion): a Node changed since fails, and the next pass plans
// again from the new one. Nothing else of the Node changes.
func (c *Controller) setTaint(ctx context.Context, n *corev1.Node, a Action) error {
	taints := []corev1.Taint{}
	for _, t := range n.Spec.Taints {
		if t.Key == a.Taint.Key && t.Value == TaintValue && t.Effect == a.Taint.Effect {
			continue // ours: dropped, or added again below
		}
		taints = append(taints, t)
	}
	if a.Kind == ActionTaint {
		taints = append(taints, a.Taint)
	}
	patch, err := replacePatch(n, "/spec/taints", taints, nil)
	if err != nil {
		return err
	}
	if _, err := c.o.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.JSONPatchType, patch, metav1PatchOptions); err != nil {
		return fmt.Errorf("%s %s on node %s: %w", a.Kind, a.Taint.Key, n.Name, err)
	}
	verb := map[ActionKind]string{ActionTaint: "Tainted", ActionUntaint: "Untainted"}[a.Kind]
	klog.InfoS(verb+" node", "node", n.Name, "taint", a.Taint.Key, "why", a.Why)
	c.o.Recorder.Eventf(n, corev1.EventTypeNormal, "Remedy"+verb, "%s %s:NoSchedule: %s", verb, a.Taint.Key, a.Why)
	return nil
}

// taintNote names a's taint in a message, if it has one.
func taintNote(t corev1.Taint) string {
	if t.Key == "" {
		return ""
	}
	return " (" + t.Key + ")"
}

// heldEventsPerMinute bounds the RemedyHeldBack Events: a fleet-wide
// guard holding hundreds of nodes makes a few Events and a log line, not
// an Event per node.
const heldEventsPerMinute = 10

// tellWithheld records a Warning Event on a node the first time a guard
// holds one of its actions back (maxUnhealthy, rateLimit), at most
// heldEventsPerMinute a minute; the rest are logged once, together.
func (c *Controller) tellWithheld(plan Plan, nodes []*corev1.Node) {
	now, at := map[string]bool{}, c.o.Clock.Now()
	c.told = slices.DeleteFunc(c.told, func(t time.Time) bool { return at.Sub(t) >= time.Minute })
	untold := 0
	for guard, acts := range plan.Withheld {
		for _, a := range acts {
			key := a.Node + "/" + a.Condition + "/" + guard
			now[key] = true
			if c.warned[key] || guard == GuardOptOut || guard == GuardPaused {
				continue
			}
			n := nodeByName(nodes, a.Node)
			if n == nil || len(c.told) >= heldEventsPerMinute {
				untold++
				continue
			}
			c.told = append(c.told, at)
			reason := map[string]string{GuardMaintenance: "RemedyStoodAside", GuardKernelDeadlock: "FenceImpossible"}[guard]
			if reason == "" {
				reason = "RemedyHeldBack"
			}
			c.o.Recorder.Eventf(n, corev1.EventTypeWarning, reason, "%s held back by %s: %s; %s",
				a.Kind, guard, guardWhy(guard, plan, n, c.o.Policy()), a.Why)
			klog.InfoS("Action held back by a guard", "node", a.Node, "action", a.Kind, "guard", guard,
				"unhealthy", plan.Unhealthy, "matching", plan.Matching, "limit", plan.Limit)
		}
	}
	if untold > 0 {
		klog.InfoS("More actions held back by guards, past the Events' bound", "actions", untold, "eventsPerMinute", heldEventsPerMinute,
			"unhealthy", plan.Unhealthy, "matching", plan.Matching, "limit", plan.Limit)
	}
	c.warned = now
}

func nodeByName(nodes []*corev1.Node, name string) *corev1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// guardWhy says why a guard holds n's actions back.
func guardWhy(guard string, plan Plan, n *corev1.Node, p *Policy) string {
	perMinute, perFence := p.MaxActionsPerMinute, p.Fence.MaxFencedNodes
	switch guard {
	case GuardRateLimit:
		return fmt.Sprintf("more than %d actions a minute", perMinute)
	case GuardMaintenance:
		return fmt.Sprintf("the Node's %s is True, so an administrator is at work", maintenance.TrueOn(n))
	case GuardMaxFenced:
		return fmt.Sprintf("%d nodes are asked to fence or out of service, maxFencedNodes %d", plan.Fencing, perFence)
	case GuardKernelDeadlock:
		return "KernelDeadlock is True: a process blocked in the kernel cannot be killed, so no fence can be proven"
	case GuardOtherFencer:
		return "another fencer is at work on the node (an out-of-service taint not hangwatch's, or a medik8s remediation)"
	}
	return fmt.Sprintf("%d of %d nodes unhealthy, more than maxUnhealthy %d", plan.Unhealthy, plan.Matching, plan.Limit)
}

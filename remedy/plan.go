package remedy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hangwatch/hangwatch/internal/maintenance"
)

// ActionKind is what an action does to a node.
type ActionKind string

// The actions.
const (
	ActionTaint   ActionKind = "taint"
	ActionUntaint ActionKind = "untaint"
	ActionEvict   ActionKind = "evict"
)

// undoes tells whether an action takes back what remedy did: no guard but
// a pause holds it.
func (k ActionKind) undoes() bool {
	return k == ActionUntaint || k == ActionUnfence || k == ActionWithdraw
}

// Action is one change to one node.
type Action struct {
	Node      string
	Kind      ActionKind
	Condition string
	Taint     corev1.Taint
	Why       string
}

// Guards that hold actions back.
const (
	GuardPaused       = "paused"
	GuardMaxUnhealthy = "maxUnhealthy"
	GuardOptOut       = "optOut"
	GuardRateLimit    = "rateLimit"
	// GuardMaintenance: the Node says an administrator is at work
	// (internal/maintenance's conditions, KEP-5683).
	GuardMaintenance = "maintenance"
)

// Row is one node's condition as the plan sees it: `status` prints it and
// the metrics count it.
type Row struct {
	Node      string    `json:"node"`
	Condition string    `json:"condition"`
	State     string    `json:"state"`
	Since     time.Time `json:"since,omitempty"`
	Action    string    `json:"action,omitempty"` // taken now, or held back by a guard
	Next      string    `json:"next,omitempty"`
	// due is how long until Next falls due with no change to the Node.
	due time.Duration
}

// Row states.
const (
	StateHealthy  = "Healthy"
	StatePending  = "Pending" // True, not yet for taintAfter
	StateTainted  = "Tainted"
	StateEvicting = "Evicting"
	StateStale    = "Stale" // no fresh condition: never acted on
	// StateOtherWriter: the condition was not written by a field manager
	// the policy trusts (node-problem-detector's KernelDeadlock, say).
	StateOtherWriter = "OtherWriter"
	StateOptedOut    = "OptedOut"
	StateStoodAside  = "StoodAside" // a maintenance condition is True: no taint or eviction
	StateUnknown     = "Unknown"    // fresh, but the writer cannot tell
	// StateForeign: someone else put a taint of this key on the node; it
	// is theirs, and the controller leaves the condition alone.
	StateForeign = "ForeignTaint"
)

// Plan is what to do now.
type Plan struct {
	Actions []Action
	// Withheld are the actions a guard held back, with the guard.
	Withheld map[string][]Action
	Rows     []Row
	// Matching and Unhealthy count the nodes the policy applies to and
	// those with a fresh True condition it acts on.
	Matching, Unhealthy, Limit int
	// Fencing counts the nodes asked to fence or out of service.
	Fencing int
}

// Decide plans the actions for nodes at now, the controller's time, from
// what clocks saw of them (Observe them first). It is level-triggered: the
// taints on the nodes are its memory, so a new leader keeps the taints the
// last one added and times the rest from its own first sight.
func Decide(p *Policy, nodes []*corev1.Node, clocks *Clocks, now time.Time) Plan {
	plan := Plan{Withheld: map[string][]Action{}}
	nodes = slices.Clone(nodes)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	parts, sel := make([]nodePlan, len(nodes)), p.parsedSelector()
	for i, n := range nodes {
		parts[i] = p.planNode(sel, n, clocks, now)
		plan.count(parts[i], 1)
	}
	plan.Limit, _ = p.unhealthyLimit(plan.Matching)
	for i, n := range nodes {
		plan.addNode(p, n, parts[i])
	}
	return plan
}

// nodePlan is one node's part of a plan.
type nodePlan struct {
	matching, sick bool
	fencing        bool // asked to fence, or out of service
	rows           []Row
	acts           []*Action // by row; nil where the row wants none
	// wake is how long until the node's plan may change with no change to
	// the Node (a wait running out, a heartbeat going stale); 0: never.
	wake time.Duration
}

// parsedSelector is the policy's node selector; nil matches every node.
func (p *Policy) parsedSelector() labels.Selector {
	sel, _ := p.selector() // validated
	return sel
}

// planNode plans one node: nothing when the policy's selector, sel, leaves
// it.
func (p *Policy) planNode(sel labels.Selector, n *corev1.Node, clocks *Clocks, now time.Time) nodePlan {
	if sel != nil && !sel.Matches(labels.Set(n.Labels)) {
		return nodePlan{}
	}
	np := nodePlan{matching: true, sick: p.unhealthy(n, clocks, now)}
	for _, c := range p.Conditions {
		row, act := p.decideOne(n, c, clocks, now)
		np.rows, np.acts = append(np.rows, row), append(np.acts, act)
		np.wake = sooner(np.wake, row.due)
		if cond := condition(n, c.Type); cond != nil && (cond.Status == corev1.ConditionTrue || hasOwnTaint(n, TaintKey(c.Type))) {
			np.wake = sooner(np.wake, clocks.freshFor(n.Name, c.Type, now, 2*p.HeartbeatPeriod.Duration))
		}
	}
	if row, act, ok := p.decideFence(n, clocks, now); ok {
		np.rows, np.acts = append(np.rows, row), append(np.acts, act)
		np.wake, np.fencing = sooner(np.wake, row.due), readFence(n).busy()
	}
	return np
}

// sooner is the earlier of two waits, 0 standing for none.
func sooner(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// count adds (sign 1) or takes away (-1) a node's part of the totals.
func (plan *Plan) count(np nodePlan, sign int) {
	if np.matching {
		plan.Matching += sign
	}
	if np.sick {
		plan.Unhealthy += sign
	}
	if np.fencing {
		plan.Fencing += sign
	}
}

// addNode files a node's rows and actions.
func (plan *Plan) addNode(p *Policy, n *corev1.Node, np nodePlan) {
	for i, row := range np.rows {
		plan.add(p, n, row, np.acts[i])
	}
}

// add files an action as taken or withheld, by the guards in order.
func (plan *Plan) add(p *Policy, n *corev1.Node, row Row, act *Action) {
	if act != nil {
		guard := ""
		switch {
		case p.Paused:
			guard = GuardPaused
		case !act.Kind.undoes() && n.Annotations[OptOutAnnotation] == "disabled":
			guard, row.State = GuardOptOut, StateOptedOut
		case !act.Kind.undoes() && maintenance.TrueOn(n) != "":
			guard, row.State = GuardMaintenance, StateStoodAside
		case !act.Kind.undoes() && act.Kind != ActionOutOfService && plan.Unhealthy > plan.Limit:
			guard = GuardMaxUnhealthy
		case act.Kind == ActionFence:
			guard = fenceGuard(n, plan.Fencing, p.Fence.MaxFencedNodes)
		}
		if guard == "" && act.Kind == ActionFence {
			plan.Fencing++
		}
		if guard == "" {
			plan.Actions = append(plan.Actions, *act)
			row.Action = string(act.Kind)
		} else {
			plan.Withheld[guard] = append(plan.Withheld[guard], *act)
			row.Action = string(act.Kind) + " held (" + guard + ")"
		}
	}
	plan.Rows = append(plan.Rows, row)
}

// decideOne is the state of one condition of one node and the action it
// wants, if any.
func (p *Policy) decideOne(n *corev1.Node, c ConditionPolicy, clocks *Clocks, now time.Time) (Row, *Action) {
	row := Row{Node: n.Name, Condition: c.Type, State: StateStale}
	cond := condition(n, c.Type)
	tainted := hasOwnTaint(n, TaintKey(c.Type))
	if foreignTaint(n, TaintKey(c.Type)) {
		row.State = StateForeign
		return row, nil
	}
	if cond != nil && !c.trusts(n) {
		row.State = StateOtherWriter
		row.Next = "none: written by " + strings.Join(writersOf(n, c.Type), ", ") + ", not by " + strings.Join(c.writers(), ", ")
		return row, nil
	}
	r := clocks.Read(n.Name, c.Type, now)
	if cond != nil && r.Fresh && cond.Status == corev1.ConditionUnknown {
		row.State = StateUnknown
	}
	if cond == nil || !r.Fresh || (cond.Status != corev1.ConditionTrue && cond.Status != corev1.ConditionFalse) {
		if tainted {
			row.Next = "keeps the taint until the condition is fresh and known again"
		}
		return row, nil
	}
	row.Since = cond.LastTransitionTime.Time // the writer's: for display only
	taint := corev1.Taint{Key: TaintKey(c.Type), Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}
	if cond.Status == corev1.ConditionTrue {
		return p.decideTrue(row, n, c, taint, tainted, r.Held)
	}
	row.State = StateHealthy
	if !tainted {
		return row, nil
	}
	row.State = StateTainted
	clearAfter := clocks.ClearAfter(n.Name, c.Type, c.ClearAfter.Duration)
	if r.Held < clearAfter {
		row.Next, row.due = fmt.Sprintf("untaint in %v", (clearAfter-r.Held).Round(time.Second)), clearAfter-r.Held
		return row, nil
	}
	return row, &Action{Node: n.Name, Kind: ActionUntaint, Condition: c.Type, Taint: taint,
		Why: fmt.Sprintf("%s has been False for %v (clearAfter %v)", c.Type, r.Held.Round(time.Second), clearAfter)}
}

// decideTrue is decideOne for a fresh True condition held for held.
func (p *Policy) decideTrue(row Row, n *corev1.Node, c ConditionPolicy, taint corev1.Taint, tainted bool, held time.Duration) (Row, *Action) {
	row.State = StatePending
	if c.TaintAfter == nil {
		row.Next = "none (no taintAfter)"
		return row, nil
	}
	if !tainted {
		if held < c.TaintAfter.Duration {
			row.Next, row.due = fmt.Sprintf("taint in %v", (c.TaintAfter.Duration-held).Round(time.Second)), c.TaintAfter.Duration-held
			return row, nil
		}
		return row, &Action{Node: n.Name, Kind: ActionTaint, Condition: c.Type, Taint: taint,
			Why: fmt.Sprintf("%s has been True for %v (taintAfter %v): %s", c.Type, held.Round(time.Second), c.TaintAfter.Duration, reasonOf(n, c.Type))}
	}
	row.State = StateTainted
	if c.EvictAfter == nil {
		row.Next = "untaint once False for " + c.ClearAfter.Duration.String()
		return row, nil
	}
	if held < c.EvictAfter.Duration {
		row.Next, row.due = fmt.Sprintf("evict in %v", (c.EvictAfter.Duration-held).Round(time.Second)), c.EvictAfter.Duration-held
		return row, nil
	}
	row.State = StateEvicting
	return row, &Action{Node: n.Name, Kind: ActionEvict, Condition: c.Type, Taint: taint,
		Why: fmt.Sprintf("%s has been True for %v (evictAfter %v): %s", c.Type, held.Round(time.Second), c.EvictAfter.Duration, reasonOf(n, c.Type))}
}

// unhealthy: a fresh True condition the policy acts on.
func (p *Policy) unhealthy(n *corev1.Node, clocks *Clocks, now time.Time) bool {
	for _, c := range p.Conditions {
		cond := condition(n, c.Type)
		if c.TaintAfter != nil && cond != nil && cond.Status == corev1.ConditionTrue &&
			clocks.Read(n.Name, c.Type, now).Fresh && c.trusts(n) {
			return true
		}
	}
	return false
}

func condition(n *corev1.Node, condType string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == condType {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func reasonOf(n *corev1.Node, condType string) string {
	if c := condition(n, condType); c != nil {
		return c.Reason
	}
	return ""
}

// hasOwnTaint: the node has key as a NoSchedule taint this controller added.
func hasOwnTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Value == TaintValue && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// foreignTaint: the node has a NoSchedule taint of key that this
// controller did not add (another value).
func foreignTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Value != TaintValue && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

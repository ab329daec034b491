package remedy

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// FencePolicy is the recovery ladder's fourth rung: a node whose runtime
// a restart has not cured is asked to stop its pods through the kernel,
// unmount their volumes, delete them and attest it; the attestation is
// answered with the out-of-service taint, so their StatefulSet and
// ReadWriteOnce pods move. Off by default, and only on a Node labelled
// hangwatch.io/fence=enabled.
type FencePolicy struct {
	Enabled bool `json:"enabled"`
	// After: RuntimeHung True this long on the controller's clock, for a
	// reason that judges the whole runtime, asks the node to fence.
	After metav1.Duration `json:"after"`
	// Deadline is how long the node has to attest; past it the request
	// is withdrawn (FenceTimedOut).
	Deadline metav1.Duration `json:"deadline"`
	// MaxFencedNodes bounds the nodes asked to fence or out of service at
	// once.
	MaxFencedNodes int `json:"maxFencedNodes"`
}

// DefaultFencePolicy: off; when on, ask 45 s into a hang (repair's
// default restarts come at 20 s and 40 s), give the node 60 s, one node
// at a time.
func DefaultFencePolicy() FencePolicy {
	return FencePolicy{After: metav1.Duration{Duration: 45 * time.Second}, Deadline: metav1.Duration{Duration: time.Minute}, MaxFencedNodes: 1}
}

// The fence's actions.
const (
	// ActionFence writes the request on the Node.
	ActionFence ActionKind = "fence"
	// ActionOutOfService adds the out-of-service taint to an attested node.
	ActionOutOfService ActionKind = "out-of-service"
	// ActionWithdraw takes back a request that timed out or that the node
	// found impossible.
	ActionWithdraw ActionKind = "withdraw-fence"
	// ActionUnfence removes the taint, the request and the attestation
	// from a node that recovered.
	ActionUnfence ActionKind = "unfence"
)

// The fence's rows and guards.
const (
	// FenceRow is the Condition of a node's fence row.
	FenceRow = "Fence"

	StateFencePending    = "FencePending"   // RuntimeHung True, not yet for fence.after
	StateFenceRequested  = "FenceRequested" // asked, waiting for the attestation
	StateFenced          = "Fenced"         // attested and out of service
	StateFenceImpossible = "FenceImpossible"
	StateFenceIdle       = "NotFencing"

	// GuardMaxFenced: maxFencedNodes nodes are asked or out of service.
	GuardMaxFenced = "maxFencedNodes"
	// GuardKernelDeadlock: KernelDeadlock is True, so a process may be
	// blocked in the kernel where no kill reaches it.
	GuardKernelDeadlock = "kernelDeadlock"
	// GuardOtherFencer: someone else's out-of-service taint is on the
	// node, or a medik8s remediation names it.
	GuardOtherFencer = "otherFencer"
)

const fencedCondition = "RuntimeHung"

// wholeRuntimeReasons are RuntimeHung's reasons that judge the runtime as
// a whole: a call that names no object, unanswered, or nothing listening
// on its socket (RuntimeUnreachable: the node fences for it only where its
// repair restarted the runtime in this spell and it never came back, and
// leaves a stopped one to systemd and its operator, the request timing
// out). One container's ContainerStatusHung is that container's. The
// reason names the first call of
// a probe cycle past its timeout, which in a frozen runtime may be any of
// them (ImageFsInfoHung was seen on a frozen containerd): it is no sign of
// which calls still answer. That is the corroboration's to say.
var wholeRuntimeReasons = []string{"RuntimeNotResponding", "VersionHung", "StatusHung", "ListPodSandboxHung", "ListContainersHung",
	"ImageFsInfoHung", "StreamPodSandboxesHung", "StreamContainersHung", "RuntimeUnreachable"}

// corroboratingCondition and corroboratingReason: the fence is asked only
// while the relist has stalled too (PLEGUnhealthy True for RelistStalled:
// the kubelet's own relist, from its kubelet_pleg_last_seen_seconds, or
// hangwatch's emulation of it has waited past its threshold), that is
// while the calls the kubelet's pod lifecycle needs have no answer.
// ImageFsInfo hanging alone, or a runtime whose calls answer, however
// late, does not stall the relist. The
// kubelet's Ready is no corroboration here: it turns False about 128 s
// into a freeze, past the fence's targets.
const (
	corroboratingCondition = "PLEGUnhealthy"
	corroboratingReason    = "RelistStalled"
)

func validateFence(f FencePolicy, conds []ConditionPolicy, bad func(path string, value any, problem string)) {
	if f.After.Duration < 10*time.Second || f.After.Duration > time.Hour {
		bad("fence.after", f.After.Duration, "must be from 10s to 1h")
	}
	if f.Deadline.Duration < 10*time.Second || f.Deadline.Duration > 10*time.Minute {
		bad("fence.deadline", f.Deadline.Duration, "must be from 10s to 10m (the node refuses a request older than 10m)")
	}
	if f.MaxFencedNodes < 1 || f.MaxFencedNodes > 10 {
		bad("fence.maxFencedNodes", f.MaxFencedNodes, "must be from 1 to 10")
	}
	if f.Enabled && !slices.ContainsFunc(conds, func(c ConditionPolicy) bool { return c.Type == fencedCondition }) {
		bad("fence.enabled", true, "needs a conditions entry for RuntimeHung (its writers and clearAfter are the fence's)")
	}
}

// fenceState is what the Node says of its fence.
type fenceState struct {
	req          fencing.Request
	hasReq       bool
	reqErr       error
	att          fencing.Attestation
	hasAtt       bool
	ours, others bool
}

func readFence(n *corev1.Node) fenceState {
	var s fenceState
	s.req, s.hasReq, s.reqErr = fencing.RequestOf(n)
	var attErr error
	s.att, s.hasAtt, attErr = fencing.AttestationOf(n)
	s.hasAtt = s.hasAtt && attErr == nil
	s.ours, s.others = fencing.HasOutOfService(n)
	return s
}

// busy: the node counts against maxFencedNodes.
func (s fenceState) busy() bool { return s.hasReq || s.ours }

// involved: the node carries something of the fence that remedy must
// see through, whether or not the fence is still on.
func (s fenceState) involved() bool { return s.hasReq || s.ours || s.hasAtt }

// decideFence is a node's fence row and the action it wants; ok false
// when the fence has nothing to say of the node.
func (p *Policy) decideFence(n *corev1.Node, clocks *Clocks, now time.Time) (row Row, act *Action, ok bool) {
	s := readFence(n)
	optedIn := p.Fence.Enabled && n.Labels[fencing.OptInLabel] == fencing.OptInValue
	if !optedIn && !s.involved() {
		return Row{}, nil, false
	}
	row = Row{Node: n.Name, Condition: FenceRow, State: StateFenceIdle}
	cp, _ := p.conditionPolicy(fencedCondition)
	cond := condition(n, fencedCondition)
	r := clocks.Read(n.Name, fencedCondition, now)
	known := cond != nil && r.Fresh && cp.trusts(n)
	switch {
	case s.ours:
		row, act = p.decideRecovery(row, n, s, known && cond.Status == corev1.ConditionFalse, r.Held)
	case s.hasReq:
		row, act = p.decideAnswer(row, n, s, now)
	case known && cond.Status == corev1.ConditionFalse && s.hasAtt:
		row, act = p.decideRecovery(row, n, s, true, r.Held)
	case optedIn && known && cond.Status == corev1.ConditionTrue:
		row, act = p.decideAsk(row, n, s, cond, r.Held)
	}
	return row, act, true
}

// decideRecovery removes what the fence left on a node whose RuntimeHung
// has been False for its clearAfter: the apply checks that none of its
// pods is Terminating and no VolumeAttachment names it.
func (p *Policy) decideRecovery(row Row, n *corev1.Node, s fenceState, healthy bool, held time.Duration) (Row, *Action) {
	if s.ours {
		row.State = StateFenced
	}
	cp, _ := p.conditionPolicy(fencedCondition)
	clearAfter := cp.ClearAfter.Duration
	if !healthy {
		row.Next = fmt.Sprintf("unfence once RuntimeHung is False for %v, no pod of the node is Terminating and no VolumeAttachment names it", clearAfter)
		return row, nil
	}
	if held < clearAfter {
		row.Next, row.due = fmt.Sprintf("unfence in %v", (clearAfter-held).Round(time.Second)), clearAfter-held
		return row, nil
	}
	return row, &Action{Node: n.Name, Kind: ActionUnfence, Condition: FenceRow, Taint: fencing.OutOfService(),
		Why: fmt.Sprintf("RuntimeHung has been False for %v (clearAfter %v)", held.Round(time.Second), clearAfter)}
}

// decideAnswer reads the node's answer to the request on it.
func (p *Policy) decideAnswer(row Row, n *corev1.Node, s fenceState, now time.Time) (Row, *Action) {
	row.State = StateFenceRequested
	withdraw := func(why string) (Row, *Action) {
		return row, &Action{Node: n.Name, Kind: ActionWithdraw, Condition: FenceRow, Why: why}
	}
	switch {
	case s.reqErr != nil:
		return withdraw("the request on the Node is malformed: " + s.reqErr.Error())
	case s.hasAtt && s.att.RequestID == s.req.ID && s.att.Fenced() && s.att.Answers(s.req, n):
		return row, &Action{Node: n.Name, Kind: ActionOutOfService, Condition: FenceRow, Taint: fencing.OutOfService(),
			Why: fmt.Sprintf("the node attested fence %s at %s on boot %s: %d pods stopped, unmounted and deleted",
				s.req.ID, s.att.At.Format(time.RFC3339), s.att.BootID, len(s.att.Pods))}
	case s.hasAtt && s.att.RequestID == s.req.ID && !s.att.Fenced():
		row.State = StateFenceImpossible
		return withdraw("the node found fence " + s.req.ID + " impossible: " + s.att.Why)
	case s.hasAtt && s.att.RequestID == s.req.ID:
		return withdraw("the attestation of fence " + s.req.ID + " is of boot " + s.att.BootID + ", not the Node's " + n.Status.NodeInfo.BootID)
	case !now.Before(s.req.Deadline):
		return withdraw(fmt.Sprintf("no attestation of fence %s by its deadline %s", s.req.ID, s.req.Deadline.Format(time.RFC3339)))
	}
	row.Next, row.due = "out of service once the node attests", s.req.Deadline.Sub(now)
	return row, nil
}

// decideAsk asks a node whose whole runtime has hung for fence.after.
func (p *Policy) decideAsk(row Row, n *corev1.Node, s fenceState, cond *corev1.NodeCondition, held time.Duration) (Row, *Action) {
	row.State = StateFencePending
	switch {
	case !slices.Contains(wholeRuntimeReasons, cond.Reason):
		row.Next = "none: RuntimeHung's reason " + cond.Reason + " is not the whole runtime's"
		return row, nil
	case s.hasAtt && !s.att.Fenced() && s.att.BootID == n.Status.NodeInfo.BootID && !s.att.At.Before(cond.LastTransitionTime.Time):
		// both times are the node's: an answer given in this spell of
		// RuntimeHung holds until the spell ends or the node boots again
		row.State, row.Next = StateFenceImpossible, "none: the node found the fence impossible in this spell ("+s.att.Why+")"
		return row, nil
	case !relistStalled(n):
		row.Next = "none until PLEGUnhealthy is True for " + corroboratingReason + " (the relist has stalled too)"
		return row, nil
	case held < p.Fence.After.Duration:
		row.Next, row.due = fmt.Sprintf("fence in %v", (p.Fence.After.Duration-held).Round(time.Second)), p.Fence.After.Duration-held
		return row, nil
	}
	return row, &Action{Node: n.Name, Kind: ActionFence, Condition: FenceRow,
		Why: fmt.Sprintf("RuntimeHung has been True for %v (fence.after %v): %s", held.Round(time.Second), p.Fence.After.Duration, cond.Reason)}
}

// fenceGuard is the guard of the fence's own that holds a fence request
// back, or "".
func fenceGuard(n *corev1.Node, fenced, limit int) string {
	s := readFence(n)
	switch {
	case s.others:
		return GuardOtherFencer
	case condTrue(n, "KernelDeadlock"):
		return GuardKernelDeadlock
	case fenced >= limit:
		return GuardMaxFenced
	}
	return ""
}

// relistStalled: the corroboration of the fence (corroboratingCondition).
func relistStalled(n *corev1.Node) bool {
	c := condition(n, corroboratingCondition)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == corroboratingReason
}

func condTrue(n *corev1.Node, condType string) bool {
	c := condition(n, condType)
	return c != nil && c.Status == corev1.ConditionTrue
}

// conditionPolicy is the policy's entry for condType.
func (p *Policy) conditionPolicy(condType string) (ConditionPolicy, bool) {
	for _, c := range p.Conditions {
		if c.Type == condType {
			return c, true
		}
	}
	return ConditionPolicy{Type: condType}, false
}

package remedy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/internal/fencing"
)

// Leases are read for a node the fence may soon ask at most this often,
// and a renewal seen within leaseFresh says its node is alive to carry the
// fence out (the kubelet renews every 10 s).
const (
	leaseReadEvery = 5 * time.Second
	leaseFresh     = 40 * time.Second
	// unfenceCheckEvery paces the lists behind an unfence.
	unfenceCheckEvery = 10 * time.Second
)

// leaseSighting is what the controller saw of a node's Lease, on its own
// clock: the renewTime (compared only with itself) and when it last moved.
type leaseSighting struct {
	renew  string
	moved  time.Time // zero: not seen to move yet
	readAt time.Time
}

// watchLeases reads the Lease of each node whose fence is pending or due,
// so that its renewal has been seen to move by the time it is asked, and
// forgets the others'.
func (c *Controller) watchLeases(ctx context.Context, plan Plan) {
	watched := map[string]bool{}
	for _, r := range plan.Rows {
		if r.Condition == FenceRow && (r.State == StateFencePending || r.Action == string(ActionFence)) {
			watched[r.Node] = true
			c.readLease(ctx, r.Node)
		}
	}
	for node := range c.leases {
		if !watched[node] {
			delete(c.leases, node)
		}
	}
}

func (c *Controller) readLease(ctx context.Context, node string) {
	now := c.o.Clock.Now()
	s := c.leases[node]
	if s != nil && now.Sub(s.readAt) < leaseReadEvery {
		return
	}
	l, err := c.o.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		klog.V(2).InfoS("Reading the node's Lease failed", "node", node, "err", err)
		return
	}
	renew := ""
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	switch {
	case s == nil:
		c.leases[node] = &leaseSighting{renew: renew, readAt: now}
	case s.renew != renew:
		s.renew, s.moved, s.readAt = renew, now, now
	default:
		s.readAt = now
	}
}

// leaseRenewed: the controller saw node's Lease renewed within leaseFresh.
func (c *Controller) leaseRenewed(node string) bool {
	s := c.leases[node]
	return s != nil && !s.moved.IsZero() && c.o.Clock.Since(s.moved) < leaseFresh
}

// fenceSafe checks what only the API server can tell before a request:
// the node alive (its Lease renewed) and no other fencer at work on it.
func (c *Controller) fenceSafe(ctx context.Context, n *corev1.Node) (bool, string) {
	c.readLease(ctx, n.Name)
	if !c.leaseRenewed(n.Name) {
		return false, "its Lease has not been seen renewed in the last " + leaseFresh.String()
	}
	if c.o.OtherFencers != nil {
		who, err := c.o.OtherFencers(ctx, n.Name)
		if err != nil {
			return false, "other fencers cannot be listed: " + err.Error()
		}
		if who != "" {
			return false, "another fencer is at work: " + who
		}
	}
	return true, ""
}

// recovered checks what the out-of-service taint waits on: none of the
// node's pods Terminating, no VolumeAttachment naming it.
func (c *Controller) recovered(ctx context.Context, node string) (bool, string) {
	pods, err := c.o.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return false, "the node's pods cannot be listed: " + err.Error()
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			return false, fmt.Sprintf("pod %s/%s is Terminating", p.Namespace, p.Name)
		}
	}
	vas, err := c.o.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "VolumeAttachments cannot be listed: " + err.Error()
	}
	for _, va := range vas.Items {
		if va.Spec.NodeName == node {
			return false, "VolumeAttachment " + va.Name + " names the node"
		}
	}
	return true, ""
}

// applyFence takes one of the fence's actions on n, as read just now.
func (c *Controller) applyFence(ctx context.Context, p *Policy, a Action, n *corev1.Node) error {
	var (
		patch  []byte
		pt     = types.MergePatchType
		reason string
		warn   = true
		err    error
	)
	switch a.Kind {
	case ActionFence:
		req := fencing.Request{ID: newFenceID(c.o.Clock.Now()), BootID: n.Status.NodeInfo.BootID,
			Deadline: c.o.Clock.Now().Add(p.Fence.Deadline.Duration), ValidFor: p.Fence.Deadline.Duration}
		patch, err = annotationsPatch(n, req.Annotations(), fencing.AttestationAnnotations)
		reason, a.Why = "FenceRequested", fmt.Sprintf("asked the node to fence (request %s, boot %s, deadline %s): %s", req.ID, req.BootID, req.Deadline.UTC().Format(time.RFC3339), a.Why)
	case ActionWithdraw:
		patch, err = annotationsPatch(n, nil, fencing.RequestAnnotations)
		reason = "FenceTimedOut"
		if strings.Contains(a.Why, "impossible") {
			reason = "FenceImpossible"
		}
	case ActionOutOfService, ActionUnfence:
		pt, reason = types.JSONPatchType, "FenceOutOfService"
		patch, err = outOfServicePatch(n, a.Kind == ActionOutOfService)
		if a.Kind == ActionUnfence {
			reason, warn = "Unfenced", false
		}
	}
	if err != nil {
		return err
	}
	if _, err := c.o.Client.CoreV1().Nodes().Patch(ctx, n.Name, pt, patch, metav1PatchOptions); err != nil {
		return fmt.Errorf("%s on node %s: %w", a.Kind, n.Name, err)
	}
	klog.InfoS("Fence: "+string(a.Kind), "node", n.Name, "why", a.Why)
	eventType := corev1.EventTypeNormal
	if warn {
		eventType = corev1.EventTypeWarning
	}
	c.o.Recorder.Event(n, eventType, reason, a.Why)
	return nil
}

// newFenceID is a request's id: the time and 6 random bytes.
func newFenceID(now time.Time) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("f%d-%s", now.Unix(), hex.EncodeToString(b))
}

// annotationsPatch sets set and removes drop on n, only if n is still the
// Node just read (its resourceVersion): a merge patch.
func annotationsPatch(n *corev1.Node, set map[string]string, drop []string) ([]byte, error) {
	ann := map[string]any{}
	for _, k := range drop {
		if _, ok := n.Annotations[k]; ok {
			ann[k] = nil
		}
	}
	for k, v := range set {
		ann[k] = v
	}
	meta := map[string]any{"annotations": ann}
	if n.ResourceVersion != "" {
		meta["resourceVersion"] = n.ResourceVersion
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// outOfServicePatch adds (on) or removes hangwatch's out-of-service taint,
// and on removal the request and attestation too: a JSON patch that holds
// only on the Node just read.
func outOfServicePatch(n *corev1.Node, on bool) ([]byte, error) {
	taints := []corev1.Taint{}
	oos := fencing.OutOfService()
	for _, t := range n.Spec.Taints {
		if t.Key == oos.Key && t.Value == oos.Value && t.Effect == oos.Effect {
			continue
		}
		taints = append(taints, t)
	}
	if on {
		now := metav1.Now()
		oos.TimeAdded = &now
		taints = append(taints, oos)
	}
	var drop []string
	if !on {
		for _, k := range append(append([]string{}, fencing.RequestAnnotations...), fencing.AttestationAnnotations...) {
			if _, ok := n.Annotations[k]; ok {
				drop = append(drop, k)
			}
		}
	}
	return replacePatch(n, "/spec/taints", taints, drop)
}

package nodestatus

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/conditions"
)

// getNode reads the Node with its managedFields.
func (r *Reporter) getNode(ctx context.Context) (*corev1.Node, error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	node, err := r.nodes.GetNode(rctx, r.cfg.Node)
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", r.cfg.Node, err)
	}
	return node, nil
}

// lookAgain reads the Node to see who else writes the owned types; a
// failed read is left to the next heartbeat.
func (r *Reporter) lookAgain(ctx context.Context) {
	if node, err := r.getNode(ctx); err == nil {
		r.inspect(node)
	}
}

// inspect reports each owned type another field manager writes, once for
// each set of writers, and leaves it to them unless told to overwrite it.
func (r *Reporter) inspect(node *corev1.Node) Writers {
	w := ReadWriters(node.ManagedFields)
	for _, t := range r.latest.Types() {
		others := w.Others[t]
		if len(others) == 0 || slices.Equal(r.shared[t], others) {
			continue
		}
		r.shared[t] = others
		overwrite := slices.Contains(r.cfg.Overwrite, t)
		r.yielded[t] = !overwrite
		if overwrite {
			klog.InfoS("Another writer writes a condition hangwatch owns; overwriting it as configured, so the last writer wins",
				"node", r.cfg.Node, "condition", t, "managers", others)
		} else {
			klog.InfoS("Another writer writes a condition hangwatch owns; leaving it to them (overwriteSharedConditions writes it anyway)",
				"node", r.cfg.Node, "condition", t, "managers", others)
		}
		r.metrics.sharedWith(t, others)
		if r.cfg.OnShared != nil {
			r.cfg.OnShared(t, others, overwrite)
		}
	}
	return w
}

// removeStale removes the types hangwatch wrote before and no longer owns
// (a condition disabled or taken out of the config), which would otherwise
// stay on the Node as they were forever. A failure is logged and left.
func (r *Reporter) removeStale(ctx context.Context, w Writers) {
	stale := w.stale(r.latest.Types())
	if len(stale) == 0 {
		return
	}
	body, err := RemovalPatch(stale)
	if err == nil {
		_, err = r.sendPatch(ctx, body)
	}
	if err != nil {
		klog.ErrorS(err, "Removing the conditions hangwatch wrote before and no longer owns failed; they stay on the Node", "node", r.cfg.Node, "types", stale)
		return
	}
	klog.InfoS("Removed the conditions hangwatch wrote before and no longer owns", "node", r.cfg.Node, "types", stale)
}

// writable is the snapshot of the conditions hangwatch writes: the owned
// types not left to another writer.
func (r *Reporter) writable() []conditions.Condition {
	snap := r.latest.Conditions()
	out := snap[:0]
	for _, c := range snap {
		if !r.yielded[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

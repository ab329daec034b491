package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/conditions"
)

// StatusPatch is the strategic-merge patch of nodes/<name>/status that
// sets conds: the conditions list merges on type, so other conditions stay.
func StatusPatch(conds []corev1.NodeCondition) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
}

// patch sends the patch directly (no read first: a node identity may not
// GET nodes/<name>/status) and returns the Node as written.
func (r *Reporter) patch(ctx context.Context, snap []conditions.Condition, now time.Time) (*corev1.Node, error) {
	body, err := StatusPatch(nodeConditions(snap, now))
	if err != nil {
		return nil, fmt.Errorf("encode status patch: %w", err)
	}
	return r.sendPatch(ctx, body)
}

func (r *Reporter) sendPatch(ctx context.Context, body []byte) (*corev1.Node, error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	node, err := r.nodes.PatchNodeStatus(rctx, r.cfg.Node, types.StrategicMergePatchType, body, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("patch node %s status: %w", r.cfg.Node, err)
	}
	return node, nil
}

// RemovalPatch is the strategic-merge patch of nodes/<name>/status that
// removes the conditions of the given types and leaves the others.
func RemovalPatch(condTypes []string) ([]byte, error) {
	conds := make([]map[string]string, 0, len(condTypes))
	for _, t := range condTypes {
		conds = append(conds, map[string]string{"type": t, "$patch": "delete"})
	}
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
}

package conditions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StatusPatch is the strategic-merge patch of nodes/<name>/status that
// sets conds: the conditions list merges on type, so other conditions stay.
func StatusPatch(conds []corev1.NodeCondition) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
}

// patch sends the patch directly (no read first: a node identity may not
// GET nodes/<name>/status).
func (r *Reporter) patch(ctx context.Context, snap []Condition, now time.Time) error {
	body, err := StatusPatch(nodeConditions(snap, now))
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	_, err = r.nodes.Nodes().Patch(rctx, r.cfg.Node, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node %s status: %w", r.cfg.Node, err)
	}
	return nil
}

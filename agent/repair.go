package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/internal/maintenance"
	"github.com/hangwatch/hangwatch/repair"
)

// maintenance reads the Node fresh and names its condition that says an
// administrator is at work, if one is True.
func (r *apiReporting) maintenance(ctx context.Context) (string, error) {
	n, err := r.client.GetNode(ctx, r.node)
	if err != nil {
		return "", fmt.Errorf("read Node %s: %w", r.node, err)
	}
	return maintenance.TrueOn(n), nil
}

// verdicts are the agent's conditions as repair reads them.
func (a *Agent) verdicts() []repair.Verdict {
	var out []repair.Verdict
	for _, c := range a.conds.Snapshot() {
		out = append(out, repair.Verdict{Type: c.Type, True: c.Status == corev1.ConditionTrue, Reason: c.Reason, Since: c.LastTransitionTime})
	}
	return out
}

// logNotifier stands in for Events without an API server: the repairer
// logs every outcome itself.
type logNotifier struct{}

func (logNotifier) Normal(string, string)  {}
func (logNotifier) Warning(string, string) {}

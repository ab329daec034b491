package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/hangwatch/hangwatch/conditions"
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

// repairVerdicts are the engine's conditions as repair reads them, kept
// as the engine publishes them (a conditions.Subscriber).
type repairVerdicts struct {
	mu sync.Mutex
	v  []repair.Verdict
}

// Judged keeps the latest conditions as verdicts.
func (r *repairVerdicts) Judged(j conditions.Judgement) {
	var out []repair.Verdict
	for _, c := range j.Conditions {
		out = append(out, repair.Verdict{Type: c.Type, True: c.Status == conditions.StatusTrue, Reason: c.Reason, Since: c.LastTransitionTime})
	}
	r.mu.Lock()
	r.v = out
	r.mu.Unlock()
}

// get returns the latest verdicts.
func (r *repairVerdicts) get() []repair.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.v)
}

// logNotifier stands in for Events without an API server: the repairer
// logs every outcome itself.
type logNotifier struct{}

func (logNotifier) Normal(string, string)  {}
func (logNotifier) Warning(string, string) {}

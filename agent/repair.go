package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/maintenance"
	"github.com/hangwatch/hangwatch/nodelink"
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

// repairConditions are the engine's conditions as repair reads them,
// kept as the engine publishes them (a conditions.Subscriber).
type repairConditions struct {
	mu sync.Mutex
	v  []nodelink.Condition
}

// Judged keeps the latest conditions.
func (r *repairConditions) Judged(j conditions.Judgement) {
	var out []nodelink.Condition
	for _, c := range j.Conditions {
		out = append(out, nodelink.Condition{Type: c.Type, True: c.Status == conditions.StatusTrue, Reason: c.Reason})
	}
	r.mu.Lock()
	r.v = out
	r.mu.Unlock()
}

// get returns the latest conditions.
func (r *repairConditions) get() []nodelink.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.v)
}

// logNotifier stands in for Events without an API server: the repairer
// logs every outcome itself.
type logNotifier struct{}

func (logNotifier) Normal(string, string)  {}
func (logNotifier) Warning(string, string) {}

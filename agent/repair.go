package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/repair"
)

// newRepair builds the repairer over the agent's conditions and the
// signals' silences; it acts only while the configuration enables it, and
// a reload applies a new one.
func (a *Agent) newRepair() {
	var notify repair.Notifier = logNotifier{}
	o := repair.Options{Settings: a.cfg.Repair.Settings(), Clock: a.o.Clock, Verdicts: a.verdicts,
		CRISocket: a.o.Endpoint.Address, KubeletHealthzPort: repair.PortOf(a.cfg.Kubelet.HealthzURL),
		Metrics: repair.NewMetrics(a.o.Registry), Notify: notify,
		Unanswered: map[repair.Target]repair.Silence{repair.TargetRuntime: func() (string, time.Duration) {
			return a.prober.Unanswered(repair.WholeRuntimeCalls)
		}}}
	if a.leases != nil && a.leases.Healthz != nil {
		o.Unanswered[repair.TargetKubelet] = func() (string, time.Duration) { return "/healthz", a.leases.KubeletUnanswered() }
	}
	if a.api != nil {
		o.Notify, o.Maintenance = a.api.events, a.api.maintenance
		if store, ok := a.api.client.(repair.LeaseStore); ok {
			o.Fleet = &repair.LeaseSlots{Store: store, Node: a.api.node, Clock: a.o.Clock}
		}
	}
	a.repair = repair.New(o)
}

// maintenance reads the Node fresh and names its condition that says an
// administrator is at work, if one is True.
func (r *apiReporting) maintenance(ctx context.Context) (string, error) {
	n, err := r.client.GetNode(ctx, r.node)
	if err != nil {
		return "", fmt.Errorf("read Node %s: %w", r.node, err)
	}
	for _, c := range n.Status.Conditions {
		if c.Status == corev1.ConditionTrue && slices.Contains(repair.MaintenanceConditions, string(c.Type)) {
			return string(c.Type), nil
		}
	}
	return "", nil
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

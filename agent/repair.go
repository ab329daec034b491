package agent

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/repair"
)

// repairing is the repair rung and the progress counters it waits on
// after a restart: the observations of each target's signal the engine
// has judged (the runtime's beats and cycles; the Lease reads, each with a
// probe of the kubelet's /healthz).
type repairing struct {
	*repair.Repairer
	probes map[repair.Target]*atomic.Uint64
}

// newRepair builds the repairer over the agent's conditions; it acts only
// while the configuration enables it, and a reload applies a new one.
func (a *Agent) newRepair() {
	rp := &repairing{probes: map[repair.Target]*atomic.Uint64{repair.TargetRuntime: {}, repair.TargetKubelet: {}}}
	var notify repair.Notifier = logNotifier{}
	if a.api != nil {
		notify = a.api.events
	}
	rp.Repairer = repair.New(repair.Options{Settings: a.cfg.Repair.Settings(), Clock: a.o.Clock,
		Verdicts: a.verdicts, CRISocket: a.o.Endpoint.Address, Metrics: repair.NewMetrics(a.o.Registry), Notify: notify,
		Progress: map[repair.Target]func() uint64{repair.TargetRuntime: rp.probes[repair.TargetRuntime].Load,
			repair.TargetKubelet: rp.probes[repair.TargetKubelet].Load}})
	a.repair = rp
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

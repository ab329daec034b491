package repair

import "k8s.io/component-base/metrics"

// Metrics count repair attempts and show what is left of each budget.
type Metrics struct {
	repairs *metrics.CounterVec
	left    *metrics.GaugeVec
}

// NewMetrics registers the repair metrics with reg; the counter starts at
// 0 for every target and outcome, so an alert's increase() sees the first.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		repairs: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_repairs_total", StabilityLevel: metrics.ALPHA,
			Help: "Repair decisions by target (runtime, kubelet) and outcome: restarted, dry-run, refused, impossible, budget-spent, failed, stood-aside (a maintenance condition) or fleet-bound (the fleet's slots taken); each counted once per hang."},
			[]string{"target", "outcome"}),
		left: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_repair_budget_remaining", StabilityLevel: metrics.ALPHA,
			Help: "Restarts of the target that repair may still make on this node in the current hour (repair.maxRestartsPerHour minus those of the last hour, kept in repair.stateFile)."},
			[]string{"target"}),
	}
	reg.MustRegister(m.repairs, m.left)
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		for _, o := range Outcomes {
			m.repairs.WithLabelValues(string(t), o)
		}
	}
	return m
}

func (m *Metrics) count(t Target, outcome string) {
	if m != nil {
		m.repairs.WithLabelValues(string(t), outcome).Inc()
	}
}

func (m *Metrics) budget(t Target, left int) {
	if m != nil {
		m.left.WithLabelValues(string(t)).Set(float64(left))
	}
}

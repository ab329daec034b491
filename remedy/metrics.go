package remedy

import (
	"k8s.io/component-base/metrics"
)

// Metrics are hangwatch-remedy's own.
type Metrics struct {
	nodes     *metrics.GaugeVec
	actions   *metrics.CounterVec
	guard     *metrics.GaugeVec
	trips     *metrics.CounterVec
	evictions *metrics.CounterVec
	unhealthy *metrics.Gauge
	leader    *metrics.Gauge
	// budgetUnreadable: the action budget's Lease could not be read or
	// parsed at the last pass, so every action that spends it is held.
	budgetUnreadable *metrics.Gauge
	active           map[string]bool // guards holding actions back at the last plan
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		nodes: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_remedy_nodes", StabilityLevel: metrics.ALPHA,
			Help: "Node conditions the policy covers, by condition and state (Healthy, Pending, Tainted, Evicting, Stale, Unknown, OptedOut, StoodAside, ForeignTaint, OtherWriter)."}, []string{"condition", "state"}),
		actions: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_remedy_actions_total", StabilityLevel: metrics.ALPHA,
			Help: "Actions by kind (taint, untaint, evict), condition and result (done, dry_run, error, changed: a fresh read of the Node no longer asked for it)."}, []string{"action", "condition", "result"}),
		guard: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_remedy_guard_active", StabilityLevel: metrics.ALPHA,
			Help: "1 while a guard holds actions back: paused, maxUnhealthy, optOut, rateLimit or maintenance (a Node's MaintenanceInProgress, DrainInProgress or GracefulNodeShutdownInProgress is True)."}, []string{"guard"}),
		trips: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_remedy_guard_trips_total", StabilityLevel: metrics.ALPHA,
			Help: "Times a guard began to hold actions back, by guard."}, []string{"guard"}),
		evictions: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_remedy_evictions_total", StabilityLevel: metrics.ALPHA,
			Help: "Pod evictions by outcome: evicted, blocked (a PodDisruptionBudget answered 429), error, dry_run."}, []string{"outcome"}),
		unhealthy: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_remedy_unhealthy_nodes", StabilityLevel: metrics.ALPHA,
			Help: "Nodes the policy covers with a fresh True condition it acts on."}),
		leader: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_remedy_leader", StabilityLevel: metrics.ALPHA,
			Help: "1 while this replica leads and acts."}),
		budgetUnreadable: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_remedy_budget_unreadable", StabilityLevel: metrics.ALPHA,
			Help: "1 while the action budget's Lease (<election name>-actions) or its hangwatch.io/recent-actions annotation cannot be read or parsed: every new taint and node eviction is held (fails closed)."}),
	}
	m.active = map[string]bool{}
	reg.MustRegister(m.nodes, m.actions, m.guard, m.trips, m.evictions, m.unhealthy, m.leader, m.budgetUnreadable)
	return m
}

// SetLeader says whether this replica leads.
func (m *Metrics) SetLeader(on bool) {
	if on {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// observe exports a plan's states and guards.
func (m *Metrics) observe(plan Plan, rateLimited int) {
	m.nodes.Reset()
	for _, r := range plan.Rows {
		m.nodes.WithLabelValues(r.Condition, r.State).Inc()
	}
	m.unhealthy.Set(float64(plan.Unhealthy))
	for _, g := range []string{GuardPaused, GuardMaxUnhealthy, GuardOptOut, GuardMaintenance, GuardMaxFenced, GuardKernelDeadlock, GuardOtherFencer} {
		m.guardState(g, len(plan.Withheld[g]) > 0)
	}
	m.guardState(GuardRateLimit, rateLimited > 0)
}

// budgetReadable says whether the budget's Lease could be read.
func (m *Metrics) budgetReadable(ok bool) { m.budgetUnreadable.Set(b2f(!ok)) }

// guardState sets a guard's gauge and counts a trip when it begins to hold.
func (m *Metrics) guardState(g string, on bool) {
	m.guard.WithLabelValues(g).Set(b2f(on))
	if on && !m.active[g] {
		m.trips.WithLabelValues(g).Inc()
	}
	m.active[g] = on
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

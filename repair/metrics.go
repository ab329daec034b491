package repair

import (
	"maps"
	"sync"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/nodelink"
)

// Metrics count repair attempts and keep what is left of each budget.
// The repair process serves no port: it hands its Tally to the agent
// over the link, and the agent's /metrics exports it (Relay).
type Metrics struct {
	mu      sync.Mutex
	repairs map[Target]map[string]float64
	left    map[Target]float64
	givenUp map[Target]float64
}

// NewMetrics starts every target's count at 0 for every outcome, so an
// alert's increase() sees the first.
func NewMetrics() *Metrics {
	m := &Metrics{repairs: map[Target]map[string]float64{}, left: map[Target]float64{}, givenUp: map[Target]float64{}}
	for _, t := range []Target{TargetRuntime, TargetKubelet} {
		m.repairs[t] = map[string]float64{}
		for _, o := range Outcomes {
			m.repairs[t][o] = 0
		}
	}
	return m
}

func (m *Metrics) count(t Target, outcome string) {
	if m != nil {
		m.mu.Lock()
		m.repairs[t][outcome]++
		m.mu.Unlock()
	}
}

func (m *Metrics) budget(t Target, left int) {
	if m != nil {
		m.mu.Lock()
		m.left[t] = float64(left)
		m.mu.Unlock()
	}
}

func (m *Metrics) gaveUp(t Target, up bool) {
	if m != nil {
		m.mu.Lock()
		m.givenUp[t] = map[bool]float64{true: 1}[up]
		m.mu.Unlock()
	}
}

// Tally copies the counts, budgets and what repair has given up on.
func (m *Metrics) Tally() nodelink.Tally {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := nodelink.Tally{Repairs: map[Target]map[string]float64{}, Left: maps.Clone(m.left), GivenUp: maps.Clone(m.givenUp)}
	for target, outcomes := range m.repairs {
		t.Repairs[target] = maps.Clone(outcomes)
	}
	return t
}

var (
	repairsDesc = metrics.NewDesc("hangwatch_repairs_total",
		"Repair decisions by target (runtime, kubelet) and outcome: restarted, dry-run, refused, impossible, budget-spent, failed, stood-aside (a maintenance condition) or fleet-bound (the fleet's slots taken); each counted once per hang. Counted by the repair process (hangwatch repair) and exported by the agent it is linked to; it starts again at 0 when that process restarts.",
		[]string{"target", "outcome"}, nil, metrics.ALPHA, "")
	leftDesc = metrics.NewDesc("hangwatch_repair_budget_remaining",
		"Restarts of the target that repair may still make on this node in the current hour (repair.maxRestartsPerHour minus those of the last hour, kept in repair.stateFile), as the repair process last said.",
		[]string{"target"}, nil, metrics.ALPHA, "")
	givenUpDesc = metrics.NewDesc("hangwatch_repair_given_up",
		"1 while repair has done what it can for the target (repair off, a restart impossible, the budget spent by restarts, or a restart made and the target still silent a wait later): the fence, the next rung, may act; else 0. Set by the repair process and exported by the agent it is linked to.",
		[]string{"target"}, nil, metrics.ALPHA, "")
	linkedDesc = metrics.NewDesc("hangwatch_repair_linked",
		"1 while the repair process (hangwatch repair) has read the agent's view over repair.agentSocket within the last 30 s, else 0; exported only where repair.agentSocket is set.",
		nil, nil, metrics.ALPHA, "")
)

// Relay exports in the agent what the repair process last handed over.
type Relay struct {
	metrics.BaseStableCollector
	mu     sync.Mutex
	tally  nodelink.Tally
	linked func() bool
}

// NewRelay registers the repair metrics with reg; linked tells whether
// the repair process has read the view lately.
func NewRelay(reg metrics.KubeRegistry, linked func() bool) *Relay {
	r := &Relay{tally: NewMetrics().Tally(), linked: linked}
	reg.CustomMustRegister(r)
	return r
}

// Set keeps a checked tally.
func (r *Relay) Set(t nodelink.Tally) {
	r.mu.Lock()
	r.tally = t
	r.mu.Unlock()
}

// DescribeWithStability implements metrics.StableCollector.
func (r *Relay) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- repairsDesc
	ch <- leftDesc
	ch <- givenUpDesc
	ch <- linkedDesc
}

// CollectWithStability implements metrics.StableCollector.
func (r *Relay) CollectWithStability(ch chan<- metrics.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, outcomes := range r.tally.Repairs {
		for o, v := range outcomes {
			ch <- metrics.NewLazyConstMetric(repairsDesc, metrics.CounterValue, v, t, o)
		}
	}
	for t, v := range r.tally.Left {
		ch <- metrics.NewLazyConstMetric(leftDesc, metrics.GaugeValue, v, t)
	}
	for t, v := range r.tally.GivenUp {
		ch <- metrics.NewLazyConstMetric(givenUpDesc, metrics.GaugeValue, v, t)
	}
	linked := 0.0
	if r.linked() {
		linked = 1
	}
	ch <- metrics.NewLazyConstMetric(linkedDesc, metrics.GaugeValue, linked)
}

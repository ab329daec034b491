package podstarts

import (
	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/observations"
)

// Metrics are the write path's gauges, set from each observation.
type Metrics struct {
	waiting *metrics.GaugeVec
	longest *metrics.GaugeVec
	probes  *metrics.CounterVec
}

// Stages of a pod's start the metrics are labelled with.
const (
	stageSandbox   = "sandbox"
	stageContainer = "container"
)

// NewMetrics registers the write path's metrics with reg.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		waiting: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_pod_starts_waiting", StabilityLevel: metrics.ALPHA,
			Help: "Pods waiting for the runtime to start their sandbox (stage sandbox), and containers waiting for it to create or start them (stage container), as PodStartStuck counts them."},
			[]string{"stage"}),
		longest: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_pod_start_longest_wait_seconds", StabilityLevel: metrics.ALPHA,
			Help: "How long the one of the stage that has waited longest has waited, on hangwatch's clock; 0 when none waits."},
			[]string{"stage"}),
		probes: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_pod_start_probes_total", StabilityLevel: metrics.ALPHA,
			Help: "The write path probe's sandboxes (podStarts.probe), by result: ok, error (the runtime refused it) or timeout (no answer within 4 minutes)."},
			[]string{"result"}),
	}
	reg.MustRegister(m.waiting, m.longest, m.probes)
	return m
}

func (m *Metrics) probe(result string) {
	if m != nil {
		m.probes.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) observe(o observations.PodStarts) {
	if m == nil {
		return
	}
	m.waiting.WithLabelValues(stageSandbox).Set(float64(o.Waiting))
	m.longest.WithLabelValues(stageSandbox).Set(o.OldestWaitingSeconds)
	m.waiting.WithLabelValues(stageContainer).Set(float64(o.ContainersWaiting))
	m.longest.WithLabelValues(stageContainer).Set(o.OldestContainerWaitingSeconds)
}

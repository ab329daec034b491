package nodestatus

import (
	"strconv"

	"k8s.io/component-base/metrics"
)

// ReporterMetrics count what hangwatch writes to the API server.
type ReporterMetrics struct {
	patches  *metrics.CounterVec
	refusals *metrics.CounterVec
	events   *metrics.CounterVec
	shared   *metrics.GaugeVec
}

// NewReporterMetrics registers the write counters with reg.
func NewReporterMetrics(reg metrics.KubeRegistry) *ReporterMetrics {
	m := &ReporterMetrics{
		patches: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_node_status_patches_total", StabilityLevel: metrics.ALPHA,
			Help: "Patches of the Node's status by result: success or error."}, []string{"result"}),
		refusals: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_node_status_patch_refusals_total", StabilityLevel: metrics.ALPHA,
			Help: "Patches of the Node's status the API server refused (4xx other than 408 and 429: admission, RBAC, validation), by HTTP code; each is retried slowly."},
			[]string{"code"}),
		events: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_node_events_total", StabilityLevel: metrics.ALPHA,
			Help: "Events recorded on the Node for condition transitions, by condition and event type (before client-go's aggregation and rate limit)."},
			[]string{"condition", "type"}),
		shared: metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "hangwatch_node_condition_shared", StabilityLevel: metrics.ALPHA,
			Help: "1 for each condition hangwatch owns that another field manager also writes on the Node (node-problem-detector, say), by condition and manager; hangwatch leaves such a condition to it unless overwriteSharedConditions names it."},
			[]string{"condition", "manager"}),
	}
	reg.MustRegister(m.patches, m.refusals, m.events, m.shared)
	return m
}

func (m *ReporterMetrics) patched(err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.patches.WithLabelValues(result).Inc()
}

func (m *ReporterMetrics) evented(condType, eventType string) {
	if m != nil {
		m.events.WithLabelValues(condType, eventType).Inc()
	}
}

func (m *ReporterMetrics) refused(code int32) {
	if m != nil {
		m.refusals.WithLabelValues(strconv.Itoa(int(code))).Inc()
	}
}

func (m *ReporterMetrics) sharedWith(condType string, managers []string) {
	if m == nil {
		return
	}
	for _, mgr := range managers {
		m.shared.WithLabelValues(condType, mgr).Set(1)
	}
}

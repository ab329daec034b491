package kernellog

import (
	"k8s.io/component-base/metrics"
)

// Metrics exports what the kernel log monitor reads and matches.
type Metrics struct {
	matches         *metrics.CounterVec
	facilitySkipped *metrics.CounterVec
	Lines           *metrics.Counter
	Lost            *metrics.Counter
	ParseErrors     *metrics.Counter
}

// NewMetrics registers the kernel log metrics.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		matches: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: "hangwatch_kernel_rule_matches_total", StabilityLevel: metrics.ALPHA,
			Help: "Kernel log lines matched, by rule and reason.",
		}, []string{"rule", "reason"}),
		Lines: metrics.NewCounter(&metrics.CounterOpts{
			Name: "hangwatch_kernel_lines_read_total", StabilityLevel: metrics.ALPHA,
			Help: "Kernel log records read, of every facility (each rules file matches those of its facilities).",
		}),
		facilitySkipped: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: "hangwatch_kernel_records_facility_skipped_total", StabilityLevel: metrics.ALPHA,
			Help: "Kernel log records a rules file did not match for their syslog facility (kern alone unless the file's facilities say otherwise), by the file's source and the facility.",
		}, []string{"source", "facility"}),
		Lost: metrics.NewCounter(&metrics.CounterOpts{
			Name: "hangwatch_kernel_records_lost_total", StabilityLevel: metrics.ALPHA,
			Help: "Kernel log records overwritten in the ring buffer before hangwatch read them.",
		}),
		ParseErrors: metrics.NewCounter(&metrics.CounterOpts{
			Name: "hangwatch_kernel_parse_errors_total", StabilityLevel: metrics.ALPHA,
			Help: "Kernel log records that could not be parsed and were skipped.",
		}),
	}
	reg.MustRegister(m.matches, m.facilitySkipped, m.Lines, m.Lost, m.ParseErrors)
	return m
}

func (m *Metrics) ruleCounter(rule, reason string) counterInc {
	return m.matches.WithLabelValues(rule, reason)
}

package kernellog

import (
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/internal/metricslint"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewMetrics(reg)
	m.ruleCounter("task-hung", "TaskHung").Inc()
	m.Lines.Inc()
	m.Lost.Inc()
	m.ParseErrors.Inc()
	m.facilitySkipped.WithLabelValues("hangwatch-kernel", "user").Inc()
	if names := metricslint.Check(t, reg); len(names) != 5 {
		t.Fatalf("metric families %v, want 5", names)
	}
}

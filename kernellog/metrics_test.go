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
	if names := metricslint.Check(t, reg); len(names) != 4 {
		t.Fatalf("metric families %v, want 4", names)
	}
}

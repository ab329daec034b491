package remedy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/internal/metricslint"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewMetrics(reg)
	m.SetLeader(true)
	m.actions.WithLabelValues("taint", "RuntimeHung", "done").Inc()
	m.evictions.WithLabelValues("evicted").Inc()
	plan := decideAt(DefaultPolicy(), NewClocks(), []*corev1.Node{node("a", "RuntimeHung", corev1.ConditionTrue, t0, t0)}, t0)
	m.observe(plan, 1)
	if names := metricslint.Check(t, reg); len(names) != 8 {
		t.Fatalf("metric families %v, want 8", names)
	}
}

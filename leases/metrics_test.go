package leases

import (
	"testing"
	"time"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/internal/metricslint"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewMetrics(reg)
	m.observe(Observation{Found: true, RenewTime: t0, RenewAge: 3 * time.Second, Grace: 50 * time.Second})
	m.read("error")
	if names := metricslint.Check(t, reg); len(names) != 5 {
		t.Fatalf("metric families %v, want 5", names)
	}
}

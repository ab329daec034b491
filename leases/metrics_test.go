package leases

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"k8s.io/component-base/metrics"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewMetrics(reg)
	m.observe(Observation{Found: true, RenewTime: t0, RenewAge: 3 * time.Second, Grace: 50 * time.Second})
	m.read("error")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 4 {
		t.Fatalf("%d metric families, want 4", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

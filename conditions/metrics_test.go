package conditions

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	e, err := NewEngine(DefaultSpecs(), testclock.NewFakeClock(t0), EngineOptions{Available: Inputs, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe("cri", map[string]any{}) // no keys: a rule error
	m := NewReporterMetrics(reg)
	m.patched(nil)
	m.patched(errors.New("refused"))
	m.evented(TypeRuntimeHung, "Warning")
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

package conditions

import (
	"errors"
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/internal/metricslint"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/observations"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	e, err := NewEngine(DefaultSpecs(), testclock.NewFakeClock(t0), EngineOptions{Available: Inputs, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(observations.Kernel{}) // no KernelDeadlock: a rule error
	m := NewReporterMetrics(reg)
	m.patched(nil)
	m.patched(errors.New("refused"))
	m.refused(422)
	m.evented(TypeRuntimeHung, "Warning")
	if names := metricslint.Check(t, reg); len(names) != 5 {
		t.Fatalf("metric families %v, want 5", names)
	}
}

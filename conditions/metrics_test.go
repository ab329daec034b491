package conditions

import (
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
	if names := metricslint.Check(t, reg); len(names) != 2 {
		t.Fatalf("metric families %v, want 2", names)
	}
}

package nodestatus

import (
	"errors"
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/metricslint"
)

func TestMetricsLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := NewReporterMetrics(reg)
	m.patched(nil)
	m.patched(errors.New("refused"))
	m.refused(422)
	m.evented(conditions.TypeRuntimeHung, "Warning")
	m.sharedWith(conditions.TypeKernelDeadlock, []string{"node-problem-detector"})
	if names := metricslint.Check(t, reg); len(names) != 4 {
		t.Fatalf("metric families %v, want 4", names)
	}
}

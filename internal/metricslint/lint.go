// Package metricslint checks a registry's metrics the way promtool check
// metrics does, for the packages' unit tests.
package metricslint

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"k8s.io/component-base/metrics"
)

// Check gathers reg, fails t on any lint problem and returns the names of
// the metric families gathered.
func Check(t testing.TB, reg metrics.KubeRegistry) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

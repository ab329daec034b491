package cri

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/hangwatch/hangwatch/internal/critest"
	"github.com/hangwatch/hangwatch/internal/metricslint"
)

func TestMetricsAfterACycleAndLint(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	f := critest.New(2, 2)
	var p *Prober
	m := NewMetrics(reg, func() map[string]time.Duration { return p.OldestInFlight() })
	p, _, _ = newTestProber(f, testConfig())
	p.observer = m
	p.Cycle(context.Background()) // the prober records its own cycle

	want := `
# HELP hangwatch_cri_objects [ALPHA] Pod sandboxes and containers the runtime listed in the last cycle that listed them.
# TYPE hangwatch_cri_objects gauge
hangwatch_cri_objects{kind="container"} 2
hangwatch_cri_objects{kind="sandbox"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hangwatch_cri_objects"); err != nil {
		t.Fatal(err)
	}
	names := metricslint.Check(t, reg)
	for _, n := range []string{"hangwatch_cri_call_duration_seconds", "hangwatch_cri_probes_total",
		"hangwatch_cri_last_success_timestamp_seconds", "hangwatch_cri_response_size_bytes", "hangwatch_cri_call_in_flight_seconds"} {
		if !names[n] {
			t.Errorf("metric %s not exported", n)
		}
	}
}

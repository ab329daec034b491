package cri_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
)

var bench = containerd.Shared{Pods: 100, PerPod: 1}

func TestMain(m *testing.M) {
	code := m.Run()
	bench.Stop()
	os.Exit(code)
}

type callCounter struct{ calls atomic.Int64 }

func (c *callCounter) ObserveProbe(cri.CallResult)      {}
func (c *callCounter) ObserveCompletion(cri.CallResult) { c.calls.Add(1) }
func (c *callCounter) ObserveCycle(cri.Cycle)           {}

// BenchmarkProbeCycle times one probe cycle against a real containerd
// holding 100 running containers in 100 sandboxes: wall time and
// allocations per cycle, and the CRI calls each cycle sends.
func BenchmarkProbeCycle(b *testing.B) {
	c := bench.Get(b)
	for _, tc := range []struct {
		name      string
		sample    int
		alternate bool
	}{{"run-defaults", 1, true}, {"sample=3", 3, false}, {"sample=all", 100, false}} {
		b.Run(tc.name, func(b *testing.B) {
			conn, err := cri.Dial(c.Endpoint)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			cfg := cri.DefaultConfig()
			cfg.SampleSize, cfg.AlternateKinds = tc.sample, tc.alternate
			counter := &callCounter{}
			p := cri.NewProber(conn.Runtime, conn.Image, cfg, clock.RealClock{}, counter)
			if cyc := p.Cycle(context.Background()); cyc.Containers != 100 {
				b.Fatalf("containers = %d, want 100", cyc.Containers)
			}
			counter.calls.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.Cycle(context.Background())
			}
			b.StopTimer()
			b.ReportMetric(float64(counter.calls.Load())/float64(b.N), "calls/cycle")
		})
	}
}

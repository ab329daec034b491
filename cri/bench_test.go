package cri_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/test/harness"
)

var bench struct {
	once sync.Once
	c    *harness.Containerd
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.c != nil {
		bench.c.Stop()
	}
	os.Exit(code)
}

// benchContainerd starts, once per test binary, a real containerd with 100
// pods of one running container each.
func benchContainerd(b *testing.B) *harness.Containerd {
	harness.RequireRealParts(b)
	bench.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		bench.c, bench.err = harness.StartContainerd(ctx)
		if bench.err == nil {
			_, bench.err = bench.c.CreatePods(ctx, 100, 1)
		}
	})
	if bench.err != nil {
		b.Fatalf("start containerd with 100 containers: %v", bench.err)
	}
	return bench.c
}

type callCounter struct{ calls atomic.Int64 }

func (c *callCounter) ObserveProbe(cri.CallResult)      {}
func (c *callCounter) ObserveCompletion(cri.CallResult) { c.calls.Add(1) }

// BenchmarkProbeCycle times one probe cycle against a real containerd
// holding 100 running containers in 100 sandboxes: wall time and
// allocations per cycle, and the CRI calls each cycle sends.
func BenchmarkProbeCycle(b *testing.B) {
	c := benchContainerd(b)
	for _, tc := range []struct {
		name   string
		sample int
	}{{"sample=3", 3}, {"sample=all", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			conn, err := cri.Dial(c.Endpoint)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			cfg := cri.DefaultConfig()
			cfg.SampleSize = tc.sample
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

package kubeletmetrics

import (
	"testing"
	"time"
)

// BenchmarkParse parses a whole real kubelet v1.34 /metrics body (178 KB),
// as every scrape does.
func BenchmarkParse(b *testing.B) {
	body := []byte(readAll(b, "testdata/kubelet-1.34-healthy.prom"))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseBytes(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindow adds a scrape to a 5 minute window and computes its stats.
func BenchmarkWindow(b *testing.B) {
	s, err := ParseBytes([]byte(readAll(b, "testdata/kubelet-1.34-healthy.prom")))
	if err != nil {
		b.Fatal(err)
	}
	w := NewWindow(5 * time.Minute)
	at := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(10 * time.Second)
		w.Add(at, s)
	}
}

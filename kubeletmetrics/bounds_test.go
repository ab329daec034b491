package kubeletmetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// manyLabels is a kubelet_pleg_* sample with n labels.
func manyLabels(n int) string {
	var b strings.Builder
	b.WriteString("kubelet_pleg_last_seen_seconds{")
	for i := range n {
		fmt.Fprintf(&b, "l%d=\"v\",", i)
	}
	b.WriteString("} 1\n")
	return b.String()
}

// TestReadLinesAreBounded: a read family's line with thousands of labels
// (10.8 s of CPU in expfmt before) or over the length bound is refused by
// its number without being parsed; other families' lines are not judged.
func TestReadLinesAreBounded(t *testing.T) {
	body := "# HELP up ok\nup 1\n" + manyLabels(16000)
	start := time.Now()
	_, err := ParseBytes([]byte(body))
	if err == nil || !strings.Contains(err.Error(), "line 3: 164924 bytes, over the 4096") {
		t.Fatalf("16k labels: %v", err)
	}
	if _, err := ParseBytes([]byte(manyLabels(MaxLabels + 1))); err == nil || !strings.Contains(err.Error(), "line 1: 17 labels, over the 16") {
		t.Fatalf("%d labels: %v", MaxLabels+1, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("refusing took %v", d) // logged, not asserted: shared machines
	}
	long := "kubelet_pleg_relist_interval_seconds_count{a=\"" + strings.Repeat("x", MaxLineBytes) + "\"} 1\n"
	if _, err := ParseBytes([]byte(long)); err == nil || !strings.Contains(err.Error(), "line 1: 4146 bytes, over the 4096") {
		t.Fatalf("a long line: %v", err)
	}
	other := manyLabels(100)
	other = strings.Replace(other, "kubelet_pleg_last_seen_seconds", "apiserver_whatever", 1) + "kubelet_pleg_last_seen_seconds 1\n"
	if _, err := ParseBytes([]byte(other)); err != nil {
		t.Fatalf("a line of a family not read was judged: %v", err)
	}
	if _, err := ParseBytes([]byte(manyLabels(MaxLabels))); err != nil {
		t.Fatalf("%d labels: %v", MaxLabels, err)
	}
}

// BenchmarkParseAtTheBounds parses the worst body the bounds let through:
// MaxBody of read-family lines, each of MaxLabels labels and about
// MaxLineBytes. It is the parse's time bound.
func BenchmarkParseAtTheBounds(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# TYPE kubelet_runtime_operations_total counter\n")
	value := strings.Repeat("v", (MaxLineBytes-400)/MaxLabels)
	for i := 0; sb.Len() < MaxBody-MaxLineBytes; i++ {
		sb.WriteString("kubelet_runtime_operations_total{")
		for l := range MaxLabels - 1 {
			fmt.Fprintf(&sb, "l%d=%q,", l, value)
		}
		fmt.Fprintf(&sb, "operation_type=\"op%d\"} 1\n", i)
	}
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseBytes(body); err != nil {
			b.Fatal(err)
		}
	}
}

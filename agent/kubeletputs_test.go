package agent

import (
	"testing"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

func TestKubeletPutsToldOncePerRunOfFailures(t *testing.T) {
	var k kubeletPuts
	for i, s := range []struct {
		ok, failed float64
		want       bool
	}{
		{10, 0, false}, // the first look
		{11, 0, false},
		{11, 1, true},  // failing, none worked: told
		{11, 3, false}, // still failing: not again
		{12, 4, false}, // one worked: not failing
		{12, 5, true},  // failing again: told
		{0, 0, false},  // the kubelet restarted: counters start over
		{0, 1, true},   // and failing from its first renewal: told
	} {
		if got := k.stopped(kubeletmetrics.Puts{Present: true, OK: s.ok, Failed: s.failed}); got != s.want {
			t.Fatalf("scrape %d (%v ok, %v failed): %v, want %v", i, s.ok, s.failed, got, s.want)
		}
	}
	if k.stopped(kubeletmetrics.Puts{}) {
		t.Fatal("told from a scrape without the family")
	}
}

package cri

import (
	"testing"
	"time"
)

func TestNextWaitBacksOffAndRecovers(t *testing.T) {
	period, maxPeriod := 10*time.Second, 60*time.Second
	hung := Cycle{Calls: []CallResult{{Class: ClassTimeout}}}
	good := Cycle{Calls: []CallResult{{Class: ClassOK}}}
	wait := period
	var got []time.Duration
	for i := 0; i < 4; i++ {
		wait = nextWait(hung, wait, period, maxPeriod)
		got = append(got, wait)
	}
	want := []time.Duration{20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits = %v, want %v", got, want)
		}
	}
	if w := nextWait(good, wait, period, maxPeriod); w != period {
		t.Fatalf("after a clean cycle wait = %v, want %v", w, period)
	}
}

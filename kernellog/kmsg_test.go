package kernellog

import (
	"fmt"
	"testing"
	"time"
)

// TestKmsgSkipsOnlyTheRecordsHeldAtOpen: the lookback filters the ring's
// old records; once they are read, a new record stamped a little before
// the open (the printk clock lags CLOCK_MONOTONIC) is still handed on.
func TestKmsgSkipsOnlyTheRecordsHeldAtOpen(t *testing.T) {
	boot := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	open := boot.Add(time.Hour)
	k := &Kmsg{boot: boot, notAfter: open}
	record := func(seq int, at time.Time) []byte {
		return []byte(fmt.Sprintf("6,%d,%d,-;line %d\n", seq, at.Sub(boot).Microseconds(), seq))
	}
	var got []string
	collect := func(r Record) { got = append(got, r.Message) }
	k.handle(record(1, open.Add(-time.Minute)), collect)
	k.handle(record(2, open.Add(-20*time.Millisecond)), collect)
	k.drained = true // ReadAvailable met EAGAIN: the ring's records are read
	k.handle(record(3, open.Add(-20*time.Millisecond)), collect)
	k.handle(record(4, open.Add(time.Second)), collect)
	if len(got) != 2 || got[0] != "line 3" || got[1] != "line 4" {
		t.Errorf("handed on %q, want the two records logged after the ring was read", got)
	}
	if k.stats.Skipped != 2 {
		t.Errorf("skipped %d, want 2", k.stats.Skipped)
	}
}

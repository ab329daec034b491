package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// floodKmsg writes OOM-kill lines at rate per second for d; it returns how
// many it wrote.
func floodKmsg(t *testing.T, rate int, d time.Duration) int {
	t.Helper()
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const tick = 10 * time.Millisecond
	perTick := rate / int(time.Second/tick)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	written := 0
	for end := time.Now().Add(d); time.Now().Before(end); <-ticker.C {
		for i := 0; i < perTick; i++ {
			line := fmt.Sprintf("<6>Memory cgroup out of memory: Killed process %d (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999\n", 100000+written)
			if _, err := f.WriteString(line); err != nil {
				t.Fatalf("write /dev/kmsg: %v", err)
			}
			written++
		}
	}
	return written
}

// TestKmsgFloodFootprint floods the real /dev/kmsg with OOM-kill lines at
// 100k lines/s and measures hangwatch's CPU and memory. It is part of the
// benchmarks (test/bench, hack/bench.sh), not of every test run.
func TestKmsgFloodFootprint(t *testing.T) {
	c := hangwatch.SharedContainerd(t)
	hangwatch.AllowKmsgWrites(t)
	// The flood is written to /dev/kmsg (facility user): the rules opt in
	// to it, so every line goes through the matcher as a kernel line would.
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rules", hangwatch.UserFacilityRules(t))
	pid := d.Cmd.Process.Pid
	cpu0, mem0 := harness.ProcUsage(t, pid)
	rss0 := int(mem0.RSS)
	start := time.Now()
	written := floodKmsg(t, 100000, 10*time.Second)
	wall := time.Since(start)
	cpu1, mem1 := harness.ProcUsage(t, pid)
	rss1, hwm := int(mem1.RSS), int(mem1.Peak)
	cores := (cpu1 - cpu0).Seconds() / wall.Seconds()
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	read := harness.MetricValue(text, "hangwatch_kernel_lines_read_total")
	lost := harness.MetricValue(text, "hangwatch_kernel_records_lost_total")
	events, _ := d.Get("/events")
	measurements.Record(t, "flood_lines_written_per_second", float64(written)/wall.Seconds(), "lines/s")
	measurements.Record(t, "flood_hangwatch_cores", cores, "cores")
	measurements.Record(t, "flood_rss_before_kib", float64(rss0), "KiB")
	measurements.Record(t, "flood_rss_after_kib", float64(rss1), "KiB")
	measurements.Record(t, "flood_rss_peak_kib", float64(hwm), "KiB")
	measurements.Record(t, "flood_lines_read", read, "lines")
	measurements.Record(t, "flood_records_lost", lost, "records")
	measurements.Record(t, "flood_oom_events", float64(strings.Count(events, "OOMKilling")), "events")
	if cores > 0.5 {
		t.Errorf("hangwatch used %.2f cores under the flood, goal at most 0.5", cores)
	}
	if rss1-rss0 > 20<<10 {
		t.Errorf("RSS grew %d KiB under the flood, want it flat", rss1-rss0)
	}
}

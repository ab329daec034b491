package integration

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// TestKmsgRingOverrun lets the real kernel ring buffer run over a reader:
// the kernel answers its next read with EPIPE and moves it to the oldest
// record left. hangwatch's reader must count the records it lost, carry on
// without an error, and still see a line logged after the overrun. The
// ring is small (klogctl SIZE_BUFFER, 128 KiB here); three times its size
// in lines overruns it.
func TestKmsgRingOverrun(t *testing.T) {
	harness.Parallel(t, harness.LaneKmsg)
	harness.RequireRealParts(t)
	hangwatch.AllowKmsgWrites(t)
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil || size <= 0 {
		t.Fatalf("ring buffer size: %d, %v", size, err)
	}
	k, err := kernellog.OpenKmsg("/dev/kmsg", time.Hour, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.ReadAvailable(func(kernellog.Record) {}); err != nil {
		t.Fatal(err)
	}
	before := k.Stats()

	nonce := rand.Int63()
	w, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	written, lines := 0, 0
	for ; written < 3*size; lines++ {
		n, err := fmt.Fprintf(w, "<6>hangwatch overrun test %d line %d: filler to run the ring buffer over\n", nonce, lines)
		if err != nil {
			t.Fatalf("write /dev/kmsg: %v", err)
		}
		written += n
	}
	marker := fmt.Sprintf("hangwatch overrun test %d: the line after", nonce)
	if _, err := fmt.Fprintf(w, "<6>%s\n", marker); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()

	seen, read := false, 0
	err = k.ReadAvailable(func(r kernellog.Record) {
		read++
		seen = seen || strings.Contains(r.Message, marker)
	})
	after := k.Stats()
	lost := after.Lost - before.Lost
	measurements.Record(t, "kmsg_overrun_ring_bytes", float64(size), "bytes")
	measurements.Record(t, "kmsg_overrun_lines_written", float64(lines), "lines", fmt.Sprintf("%d bytes", written))
	measurements.Record(t, "kmsg_overrun_lines_read", float64(read), "lines")
	measurements.Record(t, "kmsg_overrun_records_counted_lost", float64(lost), "records")
	if err != nil {
		t.Fatalf("the reader failed on the overrun: %v", err)
	}
	if lost == 0 {
		t.Error("no lost records counted after the ring ran over")
	}
	if !seen {
		t.Error("the line logged after the overrun was not read")
	}
	if uint64(read)+lost < uint64(lines) {
		t.Errorf("read %d + lost %d < %d written: records unaccounted for", read, lost, lines)
	}
}

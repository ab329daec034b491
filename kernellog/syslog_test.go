package kernellog

import (
	"os"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// ringBuffer stands in for syslog(2): the last size bytes of what was
// logged, cut at a line start as the kernel does.
type ringBuffer struct {
	text string
	size int
}

func (r *ringBuffer) log(lines ...string) { r.text += strings.Join(lines, "\n") + "\n" }

func (r *ringBuffer) read(b []byte) (int, error) {
	t := r.text
	if len(t) > r.size {
		t = t[len(t)-r.size:]
		t = t[strings.IndexByte(t, '\n')+1:]
	}
	return copy(b, t), nil
}

func messages(t *testing.T, k *Syslog) []string {
	t.Helper()
	var out []string
	if err := k.ReadAvailable(func(r Record) { out = append(out, r.Message) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyslogHandsOnEachLineOnce(t *testing.T) {
	rb := &ringBuffer{size: 1 << 20}
	rb.log("<6>[    1.000000] boot", "<4>[    2.000000] old")
	clk := clocktesting.NewFakeClock(time.Now())
	k, err := newSyslog(rb.read, rb.size, everything, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(t, k); strings.Join(got, "|") != "boot|old" {
		t.Fatalf("first read: %q", got)
	}
	if got := messages(t, k); len(got) != 0 {
		t.Fatalf("nothing new, got %q", got)
	}
	// two lines with the stamp of the last one seen, and later ones
	rb.log("<3>[    2.000000] same stamp a", "<3>[    2.000000] same stamp b", "<6>[   10.500000] INFO: task containerd:42 blocked for more than 120 seconds.")
	got := messages(t, k)
	if strings.Join(got, "|") != "same stamp a|same stamp b|INFO: task containerd:42 blocked for more than 120 seconds." {
		t.Fatalf("second read: %q", got)
	}
	rb.log("<6>[   10.500000] same as the last")
	if got := messages(t, k); strings.Join(got, "|") != "same as the last" {
		t.Fatalf("third read: %q", got)
	}
	if s := k.Stats(); s.Lines != 6 || s.Lost != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestSyslogCountsLinesOverwrittenUnseen(t *testing.T) {
	rb := &ringBuffer{size: 120}
	rb.log("<6>[    1.000000] first")
	k, err := newSyslog(rb.read, rb.size, everything, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	messages(t, k)
	for i := 0; i < 10; i++ {
		rb.log("<6>[    5.00000" + string(rune('0'+i)) + "] flood line")
	}
	got := messages(t, k)
	if len(got) == 0 || len(got) >= 10 || k.Stats().Lost == 0 {
		t.Errorf("after a wrap: %d lines, stats %+v; want some lines and a loss", len(got), k.Stats())
	}
}

func TestParseSyslogLine(t *testing.T) {
	r, err := parseSyslogLine([]byte("<14>[12345.678901] hello: world"))
	if err != nil || r.Priority != 6 || r.Facility != 1 || r.Monotonic != 12345678901*time.Microsecond || r.Message != "hello: world" {
		t.Errorf("parsed %+v, %v", r, err)
	}
	for _, bad := range []string{"no prio", "<x>[1.0] m", "<6> no stamp", "<6>[99999999999999999.0] m", "<6>[1.9999999] m"} {
		if _, err := parseSyslogLine([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseSyslogLine: no line panics the syslog(2) parser, and what it
// accepts has a priority, a facility and a non-negative uptime.
func FuzzParseSyslogLine(f *testing.F) {
	for _, seed := range []string{"<14>[12345.678901] hello: world", "<6>[    0.000000] Linux version", "<3>[1.0]", "<x>[1.0] m"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseSyslogLine(line)
		if err != nil {
			return
		}
		if r.Priority < 0 || r.Priority > 7 || r.Facility < 0 || r.Monotonic < 0 {
			t.Fatalf("%q parsed to %+v", line, r)
		}
	})
}

// TestSyslogReadsTheRealKernelLog writes a line through /dev/kmsg and reads
// it back with syslog(2) (needs root).
func TestSyslogReadsTheRealKernelLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for /dev/kmsg and syslog(2)")
	}
	k, err := OpenSyslog(time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	messages(t, k)
	marker := "hangwatch klog test " + time.Now().Format(time.RFC3339Nano)
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("<6>" + marker + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := messages(t, k)
	found := false
	for _, m := range got {
		found = found || m == marker
	}
	if !found {
		t.Errorf("syslog(2) did not hand on %q; got %q", marker, got)
	}
}

// everything is a lookback that skips no test line (their stamps are
// seconds after boot).
const everything = 100000 * time.Hour

package rsstrim

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
)

const sampleMaps = `00400000-011ad000 r-xp 00000000 fe:00 1234 /usr/bin/hangwatch
011ad000-021fe000 r--p 00dad000 fe:00 1234 /usr/bin/hangwatch
021fe000-022b1000 rw-p 01dfe000 fe:00 1234 /usr/bin/hangwatch
022b1000-04300000 rw-p 00000000 00:00 0
c000000000-c000400000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fe:00 99 /usr/lib/other
7ffd0000000-7ffd0021000 rw-p 00000000 00:00 0 [stack]
`

func TestReadOnlyRegionsAreTheBinarysOwn(t *testing.T) {
	got, err := ReadOnlyRegions(sampleMaps, "/usr/bin/hangwatch")
	if err != nil {
		t.Fatal(err)
	}
	want := []Region{{0x400000, 0x11ad000}, {0x11ad000, 0x21fe000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("regions %+v, want the code and the constants only (not the writable data, not another file): %+v", got, want)
	}
}

func TestReadOnlyRegionsNamesABadLine(t *testing.T) {
	_, err := ReadOnlyRegions("zz-011ad000 r-xp 00000000 fe:00 1234 /bin/x\n", "/bin/x")
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "zz-011ad000") {
		t.Fatalf("error %v, want the line and its range named", err)
	}
}

// TestTrimDropsThisBinarysPages trims the test binary itself: its file
// pages leave the resident set, and the code it runs next maps again.
func TestTrimDropsThisBinarysPages(t *testing.T) {
	before := rssFileKiB(t)
	n, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if n <= 0 || after >= before {
		t.Fatalf("trimmed %d bytes of mappings: RssFile %d KiB -> %d KiB, want fewer", n, before, after)
	}
	t.Logf("trimmed %d bytes of mappings: RssFile %d KiB -> %d KiB", n, before, after)
}

func rssFileKiB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("RssFile line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func FuzzReadOnlyRegions(f *testing.F) {
	f.Add(sampleMaps, "/usr/bin/hangwatch")
	f.Add("1-0 r-xp 0 0:0 1 /x\n", "/x")
	f.Fuzz(func(t *testing.T, maps, exe string) {
		regions, err := ReadOnlyRegions(maps, exe)
		if err != nil {
			return
		}
		for _, r := range regions {
			if r.End <= r.Start {
				t.Fatalf("region %+v: end not after start", r)
			}
		}
	})
}

// TestEveryTrimsAfterFirstThenEachPeriod steps a fake clock: the first
// trim after First, then one each Period, until ctx ends.
func TestEveryTrimsAfterFirstThenEachPeriod(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	trims := make(chan error, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, clk, Schedule{First: 20 * time.Second, Period: 5 * time.Second, FreeHeapEvery: 12}, func(_ int, err error) { trims <- err })
	}()
	for i, step := range []time.Duration{20 * time.Second, 5 * time.Second, 5 * time.Second} {
		clocktest.AwaitWaiters(t, clk, 1)
		clk.Step(step - time.Millisecond)
		select {
		case <-trims:
			t.Fatalf("trim %d came %v early", i, time.Millisecond)
		default:
		}
		clk.Step(time.Millisecond)
		if err := <-trims; err != nil {
			t.Fatalf("trim %d: %v", i, err)
		}
	}
	cancel()
	<-done
}

// TestScheduleFreesTheHeapOnTheFirstAndEveryNth: the first trim and every
// FreeHeapEvery-th after it collect and release the heap; 0 or 1 means
// every trim does.
func TestScheduleFreesTheHeapOnTheFirstAndEveryNth(t *testing.T) {
	s := Schedule{FreeHeapEvery: 12}
	for n, want := range map[int]bool{0: true, 1: false, 11: false, 12: true, 13: false, 24: true} {
		if got := s.freesHeap(n); got != want {
			t.Errorf("FreeHeapEvery 12, trim %d: frees the heap %v, want %v", n, got, want)
		}
	}
	for _, every := range []int{0, 1} {
		if !(Schedule{FreeHeapEvery: every}).freesHeap(5) {
			t.Errorf("FreeHeapEvery %d: trim 5 does not free the heap", every)
		}
	}
}

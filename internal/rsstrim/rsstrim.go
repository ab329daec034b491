// Package rsstrim drops the process's mappings of its own binary's
// read-only pages (code, constants, the function table), so the pages
// only start-up touched stop counting in its resident set. The pages stay
// in the page cache and map again on first use; nothing is written or
// lost. Start-up (flag parsing, compiling the CEL rules, every package's
// init) touches far more of a Go binary than a daemon's steady state, and
// the kernel maps cached pages around each fault (fault-around), so a
// binary's resident share stays near what start-up left behind.
package rsstrim

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// maxMapsBytes bounds the /proc/self/maps read: a Go process has a few
// dozen mappings, a few KiB.
const maxMapsBytes = 1 << 20

// Region is one read-only mapping of the executable.
type Region struct{ Start, End uintptr }

// Trim returns the heap's free pages to the system (FreeHeap) and drops
// the resident pages of the executable's read-only mappings
// (DropBinaryPages); it returns how many bytes of address space those
// covered.
func Trim() (int, error) {
	FreeHeap()
	return DropBinaryPages()
}

// FreeHeap is debug.FreeOSMemory: a collection, then every free span
// released to the system.
func FreeHeap() { debug.FreeOSMemory() }

// DropBinaryPages drops the resident pages of the executable's read-only
// mappings (madvise MADV_DONTNEED) and returns how many bytes of address
// space those covered.
func DropBinaryPages() (int, error) {
	regions, err := ownReadOnlyRegions()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, r := range regions {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, unix.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %#x-%#x: %w", r.Start, r.End, errno)
		}
		total += int(r.End - r.Start)
	}
	return total, nil
}

// Schedule is when Every trims: the first trim after First, then one
// every Period; the first trim and every FreeHeapEvery-th after it also
// free the heap (FreeHeap, a forced collection), the others only drop the
// binary's pages. FreeHeapEvery 0 or 1: every trim frees the heap.
type Schedule struct {
	First, Period time.Duration
	FreeHeapEvery int
}

// freesHeap says whether the n-th trim (0 the first) frees the heap.
func (s Schedule) freesHeap(n int) bool {
	return s.FreeHeapEvery <= 1 || n%s.FreeHeapEvery == 0
}

// Every trims on the schedule until ctx ends, handing each outcome to
// report; a failure ends it (the next would fail alike).
func Every(ctx context.Context, clk clock.Clock, s Schedule, report func(bytes int, err error)) {
	wait := s.First
	for n := 0; ; n++ {
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if s.freesHeap(n) {
			FreeHeap()
		}
		bytes, err := DropBinaryPages()
		report(bytes, err)
		if err != nil {
			return
		}
		wait = s.Period
	}
}

func ownReadOnlyRegions() ([]Region, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("own mappings: %w", err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxMapsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("own mappings: %w", err)
	}
	if len(data) > maxMapsBytes {
		return nil, fmt.Errorf("own mappings: more than %d bytes", maxMapsBytes)
	}
	return ReadOnlyRegions(string(data), exe)
}

// ReadOnlyRegions parses /proc/PID/maps text for the private, read-only
// (executable or not) mappings of exe. A writable mapping is never
// listed: its written pages are the process's own.
func ReadOnlyRegions(maps, exe string) ([]Region, error) {
	var out []Region
	for i, line := range strings.Split(maps, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 || strings.Join(fields[5:], " ") != exe {
			continue
		}
		perms := fields[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("maps line %d %q: bad address range", i+1, fields[0])
		}
		out = append(out, Region{uintptr(start), uintptr(end)})
	}
	return out, nil
}

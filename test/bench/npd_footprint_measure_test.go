package bench

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// dropPageCache writes back and drops a file's pages from the page cache
// (posix_fadvise POSIX_FADV_DONTNEED after fsync: dirty pages are not
// dropped) and returns how many of its pages are still cached (mincore),
// which is 0 unless a running process maps them.
func dropPageCache(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("drop page cache: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("fadvise %s: %w", path, err)
	}
	return cachedPages(f)
}

// cachedPages counts the file's pages in the page cache without faulting
// any in.
func cachedPages(f *os.File) (int, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	defer func() { _ = unix.Munmap(data) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(data)+page-1)/page)
	// x/sys/unix has no Mincore wrapper.
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", f.Name(), errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}

// procWindow is what one process did over the window.
type procWindow struct {
	samples []harness.ProcMemory
	cpu     time.Duration // user and system
}

// scrapeEvery is how often, in one-second samples, the window scrapes
// each process's /metrics, as a Prometheus beside them would: the code
// that serves a scrape is part of the resident set.
const scrapeEvery = 15

// scrape reads the process's metrics once.
func (p *benchProc) scrape(t *testing.T) {
	t.Helper()
	if code, _, err := harness.Get(p.metricsURL); err != nil || code != http.StatusOK {
		t.Fatalf("scrape %s: %d, %v", p.Name, code, err)
	}
}

// sampleWindow reads each process's memory every second for window, and
// its CPU time at both ends, scraping each every scrapeEvery seconds.
func sampleWindow(t *testing.T, procs []*benchProc, window time.Duration) ([]procWindow, time.Duration) {
	t.Helper()
	out := make([]procWindow, len(procs))
	for i, p := range procs {
		out[i].cpu, _ = harness.ProcUsage(t, p.PID())
	}
	start := time.Now()
	watched := make([]harness.Watched, len(procs))
	for i, p := range procs {
		watched[i] = p
	}
	n := 0
	harness.Throughout(t, window, "the sampled window", func() bool {
		if n%scrapeEvery == 0 {
			for _, p := range procs {
				p.scrape(t)
			}
		}
		n++
		for i, p := range procs {
			m, err := harness.ReadProcMemory(p.PID())
			if err != nil {
				t.Fatalf("%s stopped during the window: %v", p.Name, err)
			}
			out[i].samples = append(out[i].samples, m)
		}
		return true
	}, harness.Every(time.Second), harness.UnlessExited(watched...))
	wall := time.Since(start)
	for i, p := range procs {
		cpu, _ := harness.ProcUsage(t, p.PID())
		out[i].cpu = cpu - out[i].cpu
	}
	return out, wall
}

// stat is a median and a peak, in KiB.
type stat struct{ median, peak uint64 }

func statOf(samples []harness.ProcMemory, field func(harness.ProcMemory) uint64) stat {
	v := make([]uint64, len(samples))
	for i, s := range samples {
		v[i] = field(s)
	}
	slices.Sort(v)
	n := len(v)
	return stat{median: (v[(n-1)/2] + v[n/2]) / 2, peak: v[n-1]}
}

// footprintRow is one process's figures in one setup.
type footprintRow struct {
	setup, process    string
	vmRSS, anon, file stat
	cpuPercent        float64 // of one core
	cpu               time.Duration
	binaryBytes       int64
	cachedPages       int
	samples           int
}

// measurePair lets both processes warm up, samples them over the same
// window and returns hangwatch's row, then node-problem-detector's.
func measurePair(t *testing.T, setup string, hw, npd *benchProc, warmUp, window time.Duration) []footprintRow {
	t.Helper()
	harness.Window(t, warmUp, "the warm-up", harness.UnlessExited(hw, npd))
	procs := []*benchProc{hw, npd}
	windows, wall := sampleWindow(t, procs, window)
	rows := make([]footprintRow, len(procs))
	for i, p := range procs {
		rows[i] = rowOf(t, setup, p, windows[i], wall)
		logRow(t, rows[i])
	}
	return rows
}

func rowOf(t *testing.T, setup string, p *benchProc, w procWindow, wall time.Duration) footprintRow {
	t.Helper()
	fi, err := os.Stat(p.bin)
	if err != nil {
		t.Fatal(err)
	}
	cpu := w.cpu
	return footprintRow{setup: setup, process: p.Name, binaryBytes: fi.Size(), cachedPages: p.cachedPages, samples: len(w.samples),
		vmRSS:      statOf(w.samples, func(m harness.ProcMemory) uint64 { return m.RSS }),
		anon:       statOf(w.samples, func(m harness.ProcMemory) uint64 { return m.Anon }),
		file:       statOf(w.samples, func(m harness.ProcMemory) uint64 { return m.File }),
		cpu:        cpu,
		cpuPercent: cpu.Seconds() / wall.Seconds() * 100}
}

func logRow(t *testing.T, r footprintRow) {
	t.Helper()
	id := strings.ReplaceAll(r.setup, "-", "") + "_" + strings.ReplaceAll(r.process, "-", "_")
	for _, mem := range []struct {
		name string
		s    stat
	}{{"vmrss", r.vmRSS}, {"rssanon", r.anon}, {"rssfile", r.file}} {
		measurements.Record(t, "npd_bench_"+id+"_"+mem.name+"_median_kib", float64(mem.s.median), "KiB")
		measurements.Record(t, "npd_bench_"+id+"_"+mem.name+"_peak_kib", float64(mem.s.peak), "KiB")
	}
	measurements.Record(t, "npd_bench_"+id+"_cpu_percent", r.cpuPercent, "% of a core")
	measurements.Record(t, "npd_bench_"+id+"_cpu_seconds", r.cpu.Seconds(), "s")
	measurements.Record(t, "npd_bench_"+id+"_binary_bytes", float64(r.binaryBytes), "bytes",
		fmt.Sprintf("pages cached at start: %d; %d samples", r.cachedPages, r.samples))
}

// footprintTable renders the rows, pairs of hangwatch then
// node-problem-detector, as a markdown table with a ratio row per setup.
func footprintTable(rows []footprintRow) string {
	var b strings.Builder
	b.WriteString("| setup | process | VmRSS median / peak | RssAnon median / peak | RssFile median / peak | CPU: % of a core (seconds) | binary |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for i := 0; i+1 < len(rows); i += 2 {
		for _, r := range rows[i : i+2] {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f %% (%.2f s) | %.1f MiB |\n", r.setup, r.process,
				mib(r.vmRSS), mib(r.anon), mib(r.file), r.cpuPercent, r.cpu.Seconds(), float64(r.binaryBytes)/(1<<20))
		}
		hw, npd := rows[i], rows[i+1]
		fmt.Fprintf(&b, "| %s | hangwatch / NPD | %s | %s | %s | %s | %.2f |\n", hw.setup,
			ratios(hw.vmRSS, npd.vmRSS), ratios(hw.anon, npd.anon), ratios(hw.file, npd.file),
			ratio(hw.cpuPercent, npd.cpuPercent), float64(hw.binaryBytes)/float64(npd.binaryBytes))
	}
	return b.String()
}

func mib(s stat) string {
	return fmt.Sprintf("%.1f / %.1f MiB", float64(s.median)/1024, float64(s.peak)/1024)
}

func ratios(a, b stat) string {
	return ratio(float64(a.median), float64(b.median)) + " / " + ratio(float64(a.peak), float64(b.peak))
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

package agent

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/memlimit"
	"github.com/hangwatch/hangwatch/internal/rsstrim"
)

// The first trim comes once start-up is over (rules compiled, first
// cycle, first sync with the API server). Later ones come every
// trimPeriod, the CRI heartbeat's period: each drops the binary's pages
// that rarer paths (a condition change, an Event, a scrape's encoder, a
// collection's stack scan, a Lease read) mapped since, so the resident set
// is what the last few seconds used. The kernel maps up to 64 KiB of
// cached pages around each fault (fault-around), so one touched byte
// keeps 16 pages resident until the next trim: with a trim a minute the
// binary's resident pages were the union of a minute's touches. Dropping
// the pages costs a madvise and the few hundred faults that map the used
// pages again: measured beside the API server, about 0.07% of a core
// more than a trim a minute (under 2 ms a drop). Freeing the heap costs
// a forced collection, so only the first trim and every freeHeapEvery-th
// after it do that (once a minute). BENCHMARKS.md has the schedules
// measured side by side (issue 41).
const (
	firstTrim     = 20 * time.Second
	trimPeriod    = 2500 * time.Millisecond
	freeHeapEvery = 24
)

// trimResidentSet drops the binary's read-only pages from the resident set
// after start-up and then every trimPeriod, and frees the heap every
// freeHeapEvery-th time (package rsstrim).
func trimResidentSet(ctx context.Context, clk clock.Clock) {
	sched := rsstrim.Schedule{First: firstTrim, Period: trimPeriod, FreeHeapEvery: freeHeapEvery}
	rsstrim.Every(ctx, clk, sched, func(bytes int, err error) {
		if err != nil {
			klog.ErrorS(err, "Dropping the binary's pages from the resident set failed; not trying again")
			return
		}
		klog.V(4).InfoS("Dropped the binary's read-only pages from the resident set", "mappedBytes", bytes)
	})
}

// defaultGCPercent is the daemon's GOGC unless the environment sets one:
// its live heap is a few MiB, so collecting at half again as much (rather
// than Go's twice) costs little CPU and kept about 1 MiB less resident
// side by side (BENCHMARKS.md).
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent when GOGC is not set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// memoryLimitPercent is the share of the cgroup's memory limit the daemon
// gives the Go runtime as its soft limit (debug.SetMemoryLimit) when
// GOMEMLIMIT is not set. Without one the heap grows to its GOGC target,
// live heap × 1.5, whatever the container's limit: a CRI ListContainers
// answer near the 16 MiB gRPC limit is received whole and decoded to about
// twice its size (31 MiB), and without the limit hangwatch was OOM-killed
// in 128Mi by answers of 12 MiB, with it not by 16 MiB (README, "A Go
// memory limit"). The Go limit covers only what the runtime maps (heap,
// stacks, its metadata); the binary's resident pages (RssFile, 15 MiB
// measured), page cache and kernel socket buffers charged to the cgroup
// are outside it. 80% leaves them 25.6 MiB of the shipped 128Mi
// (hangwatch-remedy's chart: GOMEMLIMIT 200MiB of 256Mi, 78%). The limit
// is soft: past it the runtime collects more often, at most about half
// the CPU, rather than fail.
const memoryLimitPercent = 80

// setMemoryLimit applies memoryLimitPercent of the cgroup's memory limit
// unless GOMEMLIMIT is set, logs the limit in force once and returns it
// (math.MaxInt64 for none).
func setMemoryLimit(files memlimit.Files) int64 {
	if v, set := os.LookupEnv("GOMEMLIMIT"); set {
		limit := debug.SetMemoryLimit(-1)
		klog.InfoS("Go memory limit from GOMEMLIMIT", "GOMEMLIMIT", v, "limitBytes", limit)
		return limit
	}
	lim, ok, err := files.Read()
	switch {
	case err != nil:
		klog.ErrorS(err, "Reading the cgroup's memory limit failed; no Go memory limit set")
	case !ok:
		klog.InfoS("No cgroup memory limit; no Go memory limit set")
	default:
		goLimit := lim.Bytes / 100 * memoryLimitPercent
		debug.SetMemoryLimit(goLimit)
		klog.InfoS("Go memory limit set from the cgroup's", "limitBytes", goLimit, "cgroupLimitBytes", lim.Bytes,
			"percent", memoryLimitPercent, "file", lim.File)
	}
	return debug.SetMemoryLimit(-1)
}

// newMemoryLimitGauge registers hangwatch_go_memory_limit_bytes.
func newMemoryLimitGauge(reg metrics.KubeRegistry) *metrics.Gauge {
	g := metrics.NewGauge(&metrics.GaugeOpts{
		Name: "hangwatch_go_memory_limit_bytes", StabilityLevel: metrics.ALPHA,
		Help: "The Go runtime's soft memory limit: GOMEMLIMIT, else 80% of the cgroup's memory limit, else 9223372036854775807 (none).",
	})
	reg.MustRegister(g)
	return g
}

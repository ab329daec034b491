package agent

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/rsstrim"
)

// The first trim comes once start-up is over (rules compiled, first
// cycle, first sync with the API server); later ones drop what rarer paths
// (a condition change, an Event, a scrape's encoder) mapped since, so the
// resident set is what the last minute used. A trim costs one collection
// of a heap of a few MiB and the faults that map the used pages again.
const (
	firstTrim  = 20 * time.Second
	trimPeriod = time.Minute
)

// trimResidentSet drops the binary's read-only pages from the resident set
// after start-up and then every trimPeriod (package rsstrim).
func trimResidentSet(ctx context.Context, clk clock.Clock) {
	rsstrim.Every(ctx, clk, firstTrim, trimPeriod, func(bytes int, err error) {
		if err != nil {
			klog.ErrorS(err, "Dropping the binary's start-up pages from the resident set failed; not trying again")
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

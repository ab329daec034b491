package pleg

import (
	"fmt"
	"time"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

// Verdicts.
const (
	VerdictHealthy   = "Healthy"
	VerdictUnhealthy = "Unhealthy"
	VerdictUnknown   = "Unknown"
)

// Reasons name the signal that decided; they are the condition's reasons.
const (
	ReasonStalled      = "RelistStalled"
	ReasonSlow         = "RelistSlow"
	ReasonTooLarge     = "RelistResponseTooLarge"
	ReasonHealthy      = "RelistHealthy"
	ReasonNoSignal     = "NoPLEGSignal"
	kubeletThreshold   = 3 * time.Minute // genericPlegRelistThreshold, hard-coded in the kubelet
	tooLargeShare      = 0.9
	signalLastSeen     = "lastSeen"
	signalRelist       = "relistDuration"
	signalEmulation    = "emulation"
	signalScrape       = "scrape"
	stateOK            = "ok"
	stateProblem       = "problem"
	stateUnavailable   = "unavailable"
	stateUntrusted     = "untrusted"
	stateInformational = "info"
)

// Config holds the thresholds.
type Config struct {
	// StaleAfter raises RelistStalled when the kubelet's last relist is older.
	StaleAfter time.Duration
	// EmulationStallAfter raises RelistStalled when hangwatch's own relist
	// has been waiting on a CRI call this long.
	EmulationStallAfter time.Duration
	// SlowRelist raises RelistSlow when the relist p99 (kubelet's, over the
	// window) or SlowRelistsInARow emulated relists take at least this long.
	SlowRelist time.Duration
	// SlowRelistsInARow is how many completed emulated relists in a row must
	// be slow: one relist after a hundred pods started at once inspects
	// them all and is slow on a healthy node; the next is not.
	SlowRelistsInARow int
}

// DefaultConfig: 30 s stale (the kubelet relists every second: 30 missed
// relists, a sixth of its 3 min; 60 s left a hung ListPodSandbox flagged
// only 120 s before NotReady), 30 s for our own stuck call, 10 s slow
// (kubernetes-mixin's KubeletPlegDurationHigh).
func DefaultConfig() Config {
	return Config{StaleAfter: 30 * time.Second, EmulationStallAfter: 30 * time.Second, SlowRelist: 10 * time.Second, SlowRelistsInARow: 2}
}

// MetricsState is what the kubelet's metrics last said.
type MetricsState struct {
	// Configured is false when no metrics URL was given.
	Configured bool
	// Snapshot is the latest scrape, nil when it failed (Err says why).
	Snapshot *kubeletmetrics.Snapshot
	Stats    kubeletmetrics.Stats
	Err      error
	// ScrapedAt is when the latest successful scrape answered.
	ScrapedAt time.Time
	// FailingSince is when the current run of failed scrapes began.
	FailingSince time.Time
	Evented      kubeletmetrics.EventedPLEG
}

// Inputs are the latest of every signal.
type Inputs struct {
	Now       time.Time
	Metrics   MetricsState
	Emulation *RelistResult // nil when off or not run yet
	// SlowRelists is how many completed emulated relists in a row, up to
	// the latest, took SlowRelist or more.
	SlowRelists int
}

// Signal is one signal's state, for diag and /conditions readers.
type Signal struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail"`
}

// Assessment is the PLEG verdict with the figures behind it.
type Assessment struct {
	Verdict                     string   `json:"verdict"`
	Reason                      string   `json:"reason"`
	Message                     string   `json:"message"`
	LastSeenAgeSeconds          *float64 `json:"lastSeenAgeSeconds"`
	RelistP99Seconds            *float64 `json:"relistP99Seconds"`
	RelistP99AboveLargestBucket bool     `json:"relistP99AboveLargestBucket,omitempty"`
	PodRelistP99Seconds         *float64 `json:"podRelistP99Seconds,omitempty"`
	KubeletVersion              string   `json:"kubeletVersion,omitempty"`
	EmulatedRelistSeconds       *float64 `json:"emulatedRelistSeconds"`
	EmulationInFlight           bool     `json:"emulationInFlight,omitempty"`
	ScrapeError                 string   `json:"scrapeError,omitempty"`
	ScrapeFailingSeconds        *float64 `json:"scrapeFailingSeconds,omitempty"`
	EventedPLEG                 bool     `json:"eventedPLEG,omitempty"`
	Signals                     []Signal `json:"signals"`
}

// finding is a problem one signal found.
type finding struct{ reason, message string }

// Assess judges the signals. The first problem in this order decides:
// a response too large, a stalled relist (kubelet's gauge, then our own),
// a slow relist (kubelet's p99, then our own).
func Assess(cfg Config, in Inputs) Assessment {
	a := Assessment{Verdict: VerdictUnknown, Reason: ReasonNoSignal,
		Message: "no PLEG signal: the kubelet's metrics are not readable and the relist emulation has not completed a list"}
	var found []finding
	usable := 0
	if f, ok := assessEmulationSize(in.Emulation); ok {
		found = append(found, f)
	}
	n, fs := assessMetrics(cfg, &a, in)
	usable += n
	found = append(found, fs...)
	n, fs = assessEmulation(cfg, &a, in.Emulation, in.SlowRelists)
	usable += n
	found = append(found, fs...)
	if len(found) > 0 {
		a.Verdict = VerdictUnhealthy
		mostSevere(found, &a)
	} else if usable > 0 {
		a.Verdict, a.Reason, a.Message = VerdictHealthy, ReasonHealthy, "the PLEG relist completes on time"
	}
	return a
}

// mostSevere picks the most severe finding: too large, stalled, slow.
func mostSevere(found []finding, a *Assessment) {
	rank := map[string]int{ReasonTooLarge: 0, ReasonStalled: 1, ReasonSlow: 2}
	best := found[0]
	for _, f := range found[1:] {
		if rank[f.reason] < rank[best.reason] {
			best = f
		}
	}
	a.Reason, a.Message = best.reason, best.message
}

func seconds(d time.Duration) *float64 {
	s := float64(d.Milliseconds()) / 1000
	return &s
}

func stalledMessage(what string) string {
	return fmt.Sprintf("%s; the kubelet reports \"PLEG is not healthy\" once its relist is %v old", what, kubeletThreshold)
}

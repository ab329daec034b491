package pleg

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

func snapshot(t *testing.T, name string) *kubeletmetrics.Snapshot {
	t.Helper()
	b, err := os.ReadFile("../kubeletmetrics/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := kubeletmetrics.ParseBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// metricsAt is a healthy 1.34 scrape whose last relist was age ago, with a
// window of scrapes showing no relist slower than 25 ms.
func metricsAt(t *testing.T, now time.Time, age time.Duration) MetricsState {
	s := snapshot(t, "kubelet-1.34-healthy.prom")
	s.LastSeen = now.Add(-age)
	w := kubeletmetrics.NewWindow(5 * time.Minute)
	w.Add(now.Add(-time.Minute), s)
	return MetricsState{Configured: true, Snapshot: s, Stats: w.Add(now, s), Evented: kubeletmetrics.EventedFromMetrics(s)}
}

func TestAssess(t *testing.T) {
	now := time.Unix(1795300600, 0)
	cfg := DefaultConfig()
	ok := &RelistResult{Duration: 3 * time.Millisecond, Class: cri.ClassOK, Pods: 2}
	stuck := &RelistResult{Duration: 31 * time.Second, InFlight: true, Method: cri.MethodListPodSandbox, Class: cri.ClassTimeout}
	huge := &RelistResult{Duration: time.Second, Class: cri.ClassTooLarge, Method: cri.MethodListContainers}
	unreachable := &RelistResult{Duration: time.Millisecond, Class: cri.ClassUnreachable, Method: cri.MethodListPodSandbox, Err: "connection refused"}
	evented := metricsAt(t, now, 5*time.Minute)
	evented.Evented = kubeletmetrics.EventedPLEG{On: true, Known: true, Source: "configz"}
	// 1.37 keeps the 1 s generic relist with the Evented PLEG on: the gauge
	// counts again, and a stale one is a stall.
	evented137 := metricsAt(t, now, 5*time.Minute)
	evented137.Evented = evented.Evented
	evented137.Snapshot.Build = kubeletmetrics.Build{GitVersion: "v1.37.2", Major: 1, Minor: 37}
	evented136 := metricsAt(t, now, 5*time.Minute)
	evented136.Evented = evented.Evented
	evented136.Snapshot.Build = kubeletmetrics.Build{GitVersion: "v1.36.3", Major: 1, Minor: 36}
	hung := MetricsState{Configured: true, Err: &kubeletmetrics.ScrapeError{Kind: kubeletmetrics.KindTimeout, Err: errors.New("deadline")}, FailingSince: now.Add(-40 * time.Second)}
	cases := []struct {
		name    string
		in      Inputs
		verdict string
		reason  string
	}{
		{"nothing", Inputs{Now: now}, VerdictUnknown, ReasonNoSignal},
		{"healthy", Inputs{Now: now, Metrics: metricsAt(t, now, time.Second), Emulation: ok}, VerdictHealthy, ReasonHealthy},
		{"emulation only", Inputs{Now: now, Emulation: ok}, VerdictHealthy, ReasonHealthy},
		{"not scraped yet", Inputs{Now: now, Metrics: MetricsState{Configured: true}, Emulation: ok}, VerdictHealthy, ReasonHealthy},
		{"stale gauge", Inputs{Now: now, Metrics: metricsAt(t, now, 31*time.Second), Emulation: ok}, VerdictUnhealthy, ReasonStalled},
		{"gauge under threshold", Inputs{Now: now, Metrics: metricsAt(t, now, 29*time.Second)}, VerdictHealthy, ReasonHealthy},
		{"evented: gauge untrusted", Inputs{Now: now, Metrics: evented, Emulation: ok}, VerdictHealthy, ReasonHealthy},
		{"evented 1.36: gauge untrusted", Inputs{Now: now, Metrics: evented136, Emulation: ok}, VerdictHealthy, ReasonHealthy},
		{"evented 1.37: stale gauge trusted", Inputs{Now: now, Metrics: evented137, Emulation: ok}, VerdictUnhealthy, ReasonStalled},
		{"own relist stuck", Inputs{Now: now, Metrics: hung, Emulation: stuck}, VerdictUnhealthy, ReasonStalled},
		{"hung scrape alone", Inputs{Now: now, Metrics: hung}, VerdictUnknown, ReasonNoSignal},
		{"own relist could not list (no runtime socket)", Inputs{Now: now, Emulation: unreachable}, VerdictUnknown, ReasonNoSignal},
		{"own relist could not list, gauge fresh", Inputs{Now: now, Metrics: metricsAt(t, now, time.Second), Emulation: unreachable}, VerdictHealthy, ReasonHealthy},
		{"too large with its error", Inputs{Now: now, Emulation: &RelistResult{Class: cri.ClassTooLarge, Method: cri.MethodListContainers, Err: "grpc: received message larger than max"}}, VerdictUnhealthy, ReasonTooLarge},
		{"too large wins", Inputs{Now: now, Metrics: metricsAt(t, now, 2*time.Minute), Emulation: huge}, VerdictUnhealthy, ReasonTooLarge},
		{"slow own relists in a row", Inputs{Now: now, Emulation: &RelistResult{Duration: 12 * time.Second, Class: cri.ClassOK}, SlowRelists: 2}, VerdictUnhealthy, ReasonSlow},
		{"one slow own relist (a hundred pods just started)", Inputs{Now: now, Emulation: &RelistResult{Duration: 12 * time.Second, Class: cri.ClassOK}, SlowRelists: 1}, VerdictHealthy, ReasonHealthy},
	}
	for _, c := range cases {
		a := Assess(cfg, c.in)
		if a.Verdict != c.verdict || a.Reason != c.reason {
			t.Errorf("%s: %s/%s (%s), want %s/%s; signals %+v", c.name, a.Verdict, a.Reason, a.Message, c.verdict, c.reason, a.Signals)
		}
	}
}

// The real scrapes around a freeze: after the thaw the window holds the
// hung relists in +Inf, so the p99 says RelistSlow.
func TestAssessSlowFromRealFreezeWindow(t *testing.T) {
	before := snapshot(t, "kubelet-1.34-before-freeze.prom")
	after := snapshot(t, "kubelet-1.34-after-thaw.prom")
	now := after.LastSeen.Add(time.Second)
	w := kubeletmetrics.NewWindow(10 * time.Minute)
	w.Add(now.Add(-280*time.Second), before)
	m := MetricsState{Configured: true, Snapshot: after, Stats: w.Add(now, after)}
	a := Assess(DefaultConfig(), Inputs{Now: now, Metrics: m})
	if a.Reason != ReasonSlow || a.RelistP99Seconds == nil || !a.RelistP99AboveLargestBucket {
		t.Errorf("after the thaw: %+v", a)
	}
}

func TestMessagesAreStable(t *testing.T) {
	now := time.Unix(1795300600, 0)
	a1 := Assess(DefaultConfig(), Inputs{Now: now, Emulation: &RelistResult{Duration: 31 * time.Second, InFlight: true, Method: cri.MethodListPodSandbox}})
	a2 := Assess(DefaultConfig(), Inputs{Now: now, Emulation: &RelistResult{Duration: 95 * time.Second, InFlight: true, Method: cri.MethodListPodSandbox}})
	if a1.Message != a2.Message {
		t.Errorf("message ticks:\n%s\n%s", a1.Message, a2.Message)
	}
	m1, m2 := metricsAt(t, now, 70*time.Second), metricsAt(t, now, 170*time.Second)
	if Assess(DefaultConfig(), Inputs{Now: now, Metrics: m1}).Message != Assess(DefaultConfig(), Inputs{Now: now, Metrics: m2}).Message {
		t.Error("stale message ticks")
	}
}

// After a thaw the kubelet's hung relists land in the window, but the
// relists since the last scrape are fast again: no RelistSlow.
func TestRecoveredRelistIsNotSlow(t *testing.T) {
	before := snapshot(t, "kubelet-1.34-before-freeze.prom")
	after := snapshot(t, "kubelet-1.34-after-thaw.prom")
	later := snapshot(t, "kubelet-1.34-after-thaw.prom")
	h := later.Relist.Histogram
	for i := range h.Buckets { // 10 more relists, all under 5 ms
		h.Buckets[i].Count += 10
	}
	h.Count += 10
	now := after.LastSeen.Add(time.Second)
	w := kubeletmetrics.NewWindow(10 * time.Minute)
	w.Add(now.Add(-280*time.Second), before)
	w.Add(now, after)
	st := w.Add(now.Add(10*time.Second), later)
	a := Assess(DefaultConfig(), Inputs{Now: now.Add(10 * time.Second), Metrics: MetricsState{Configured: true, Snapshot: later, Stats: st}})
	if a.Verdict != VerdictHealthy {
		t.Errorf("recovered: %s %s %+v", a.Verdict, a.Reason, a.Signals)
	}
}

func TestCountSlowRelists(t *testing.T) {
	t0 := time.Now()
	slow := 10 * time.Second
	n, counted := 0, time.Time{}
	for i, step := range []struct {
		r    RelistResult
		want int
	}{
		{RelistResult{Start: t0, Duration: 12 * time.Second}, 1},
		{RelistResult{Start: t0, Duration: 12 * time.Second}, 1}, // the same relist seen again
		{RelistResult{Start: t0.Add(time.Minute), Duration: 11 * time.Second, InFlight: true}, 1},
		{RelistResult{Start: t0.Add(time.Minute), Duration: 13 * time.Second}, 2},
		{RelistResult{Start: t0.Add(2 * time.Minute), Duration: time.Second}, 0},
	} {
		n, counted = countSlowRelists(n, counted, step.r, slow)
		if n != step.want {
			t.Fatalf("step %d: %d slow in a row, want %d", i, n, step.want)
		}
	}
}

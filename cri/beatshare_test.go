package cri

import (
	"context"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/critest"
)

// TestCyclesLeaveVersionToTheHeartbeat runs the shipped periods (cycles
// every 30s, beats every 2.5s) for 5 minutes of fake time: the cycles send
// no Version and take the runtime's name from the beats, and a beat due
// within a period of a cycle's start waits, so a 30s period costs 11 beats
// and the cycle's own calls instead of 12 beats and a Version more. The
// list beat takes every other turn: the calls are those of Version alone.
func TestCyclesLeaveVersionToTheHeartbeat(t *testing.T) {
	f := critest.New(1, 1)
	cfg := testConfig()
	cfg.SampleSize, cfg.AlternateKinds = 1, true
	p, clk, _ := newTestProber(f, cfg)
	p.VersionByHeartbeat()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beats := make(chan Beat, 1024)
	go p.Heartbeat(ctx, 2500*time.Millisecond, func(b Beat) { beats <- b })
	<-beats
	cycles := make(chan Cycle, 64)
	go p.Run(ctx, 30*time.Second, time.Minute, func(c Cycle) { cycles <- c })
	first := <-cycles
	if first.Runtime.Name != "fake" {
		t.Errorf("cycle's runtime %+v, want the beat's", first.Runtime)
	}
	for _, r := range first.Calls {
		if r.Method == MethodVersion {
			t.Fatalf("a cycle sent Version beside the heartbeat: %+v", first.Calls)
		}
	}
	if got := first.WithBeat(Beat{Call: CallResult{Method: MethodVersion, Start: first.Start.Add(-time.Second), Class: ClassOK}}); len(got.Calls) != len(first.Calls)+1 {
		t.Errorf("an answered beat from before the cycle does not stand in for its Version: %+v", got.Calls)
	}
	const steps = 600 // 5 minutes in 500ms steps
	for i := 0; i < steps; i++ {
		clocktest.Await(t, "both loops waiting", sleepingLoops(p, clk, 2))
		clk.Step(500 * time.Millisecond)
	}
	clocktest.Await(t, "both loops waiting", sleepingLoops(p, clk, 2))
	versions, cycled := f.Count(MethodVersion), f.Count(MethodStatus)
	sent := versions + f.Count(MethodListPodSandbox) - cycled // each cycle lists once
	// 1 + 120 beats at 2.5s, less one a cycle (10 of them after the first),
	// Version and the list beat in turn.
	if sent < 110 || sent > 111 || versions < sent/2 || versions > sent/2+1 {
		t.Errorf("%d beats (%d Version) in 5 minutes beside 30s cycles, want 110 or 111 (11 beats a cycle), half of them Version", sent, versions)
	}
	t.Logf("Version %d, Status %d, ListPodSandbox %d in 5 min", versions, cycled, f.Count(MethodListPodSandbox))
}

func TestCoveredFor(t *testing.T) {
	var s beatShare
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if d := s.coveredFor(now, time.Second); d != 0 {
		t.Errorf("no cycle yet: %v", d)
	}
	s.cycleStarted(now.Add(-400 * time.Millisecond))
	if d := s.coveredFor(now, time.Second); d != 600*time.Millisecond {
		t.Errorf("a cycle 400ms ago: wait %v, want 600ms", d)
	}
	if d := s.coveredFor(now.Add(time.Second), time.Second); d != 0 {
		t.Errorf("a cycle 1.4s ago: wait %v, want 0", d)
	}
	s.cycleDue(now.Add(1150 * time.Millisecond))
	if d := s.coveredFor(now.Add(time.Second), time.Second); d != 1150*time.Millisecond {
		t.Errorf("a cycle due in 150ms: wait %v, want until a period after it (1.15s)", d)
	}
	if d := s.coveredFor(now.Add(900*time.Millisecond), time.Second); d != 0 {
		t.Errorf("a cycle due in 250ms, over a fifth of the period: wait %v, want 0", d)
	}
}

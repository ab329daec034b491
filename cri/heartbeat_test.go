package cri

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/critest"
	"github.com/hangwatch/hangwatch/observations"
)

func nextBeat(t *testing.T, beats <-chan Beat, clk *clocktesting.FakeClock, step time.Duration) Beat {
	t.Helper()
	var b Beat
	clocktest.StepUntil(t, clk, 1, step, time.Hour, "a beat", func() bool {
		select {
		case b = <-beats:
			return true
		default:
			return false
		}
	})
	return b
}

// TestHeartbeatSeesAFreezeWithinAPeriodAndATimeout freezes the runtime
// right after a beat: the next beat, the list beat, reports its call hung
// one period and one timeout later, 4.5s with the shipped 2.5s and 2s.
func TestHeartbeatSeesAFreezeWithinAPeriodAndATimeout(t *testing.T) {
	f := critest.New(1, 1)
	p, clk, _ := newTestProber(f, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beats := make(chan Beat, 16)
	go p.Heartbeat(ctx, 2500*time.Millisecond, func(b Beat) { beats <- b })
	if b := <-beats; b.Call.Class != ClassOK || b.Call.Method != MethodVersion {
		t.Fatalf("first beat %+v, want Version ok", b.Call)
	}
	f.Hang(MethodVersion, MethodListPodSandbox)
	frozen := clk.Now()
	clocktest.Await(t, "the beat's wait", sleepingLoops(p, clk, 1))
	clk.Step(2500 * time.Millisecond)
	b := nextBeat(t, beats, clk, 500*time.Millisecond)
	if b.Call.Method != MethodListPodSandbox || b.Call.Class != ClassTimeout || !b.Call.InFlight {
		t.Fatalf("beat after the freeze %+v, want the list beat timed out in flight", b.Call)
	}
	if took := clk.Since(frozen); took > 5*time.Second {
		t.Errorf("freeze seen after %v, want within 5s", took)
	}
	// The list beat keeps the turn while its call hangs; still out, later
	// beats report it and never send a second list call. (The call reaches
	// the fake on a goroutine of its own, maybe after it was reported.)
	clocktest.Await(t, "the list call in the fake", func() bool { return f.Count(MethodListPodSandbox) >= 1 })
	for range 2 {
		b = nextBeat(t, beats, clk, 500*time.Millisecond)
		if b.Call.Method != MethodListPodSandbox || b.Call.Class != ClassTimeout || f.Count(MethodListPodSandbox) != 1 {
			t.Errorf("next beat %+v after %d list calls; want the same list call still out", b.Call, f.Count(MethodListPodSandbox))
		}
	}
}

// TestTheListBeatSeesAWedgedListPathWhileVersionAnswers: a list path that
// hangs while Version answers is seen by the list beat within two periods
// and a timeout, and the view of the last cycle says ListPodSandbox hung.
func TestTheListBeatSeesAWedgedListPathWhileVersionAnswers(t *testing.T) {
	f := critest.New(1, 1)
	p, clk, _ := newTestProber(f, testConfig())
	cycle := p.Cycle(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beats := make(chan Beat, 16)
	go p.Heartbeat(ctx, 2500*time.Millisecond, func(b Beat) { beats <- b })
	<-beats
	f.Hang(MethodListPodSandbox)
	wedged := clk.Now()
	var b Beat
	for b.Call.Class != ClassTimeout {
		if b = nextBeat(t, beats, clk, 500*time.Millisecond); clk.Since(wedged) > time.Minute {
			t.Fatal("no beat saw the list path wedged")
		}
	}
	if took := clk.Since(wedged); b.Call.Method != MethodListPodSandbox || took > 7*time.Second {
		t.Fatalf("%+v after %v, want the list beat within 7s", b.Call, took)
	}
	if obs := cycle.WithBeat(b).Observation(2 * time.Second); len(obs.HungMethods) != 1 || obs.HungMethods[0] != MethodListPodSandbox {
		t.Fatalf("the cycle with the beat: %+v", obs)
	}
}

// TestHeartbeatRecoveryWakesTheCycles: a beat that answers after failing
// ones of its kind is Recovered and starts the next full cycle at once.
func TestHeartbeatRecoveryWakesTheCycles(t *testing.T) {
	f := critest.New(1, 1)
	refused := status.Error(codes.Unavailable, "connection refused")
	f.Fail(MethodVersion, refused)
	f.Fail(MethodListPodSandbox, refused)
	p, clk, _ := newTestProber(f, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cycles := make(chan Cycle, 16)
	go p.Run(ctx, time.Hour, time.Hour, func(c Cycle) { cycles <- c })
	<-cycles
	beats := make(chan Beat, 16)
	go p.Heartbeat(ctx, time.Second, func(b Beat) { beats <- b })
	if b := <-beats; b.Call.Class != ClassUnreachable || b.Recovered {
		t.Fatalf("first beat %+v, want unreachable", b)
	}
	clocktest.Await(t, "both waits", sleepingLoops(p, clk, 2))
	clk.Step(time.Second)
	if b := <-beats; b.Call.Method != MethodListPodSandbox || b.Call.Class != ClassUnreachable {
		t.Fatalf("second beat %+v, want the list beat unreachable", b)
	}
	f.Fail(MethodVersion, nil)
	f.Fail(MethodListPodSandbox, nil)
	clocktest.Await(t, "both waits", sleepingLoops(p, clk, 2))
	clk.Step(time.Second)
	if b := <-beats; !b.Recovered {
		t.Fatalf("beat after the runtime came back %+v, want Recovered", b)
	}
	select {
	case <-cycles:
	case <-time.After(time.Minute): // a bound for a broken wake only; not a wait the test needs
		t.Fatal("the recovered beat did not wake the full cycles")
	}
}

func TestWithBeatReplacesOnlyAnOlderVersion(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	list := CallResult{Method: MethodListPodSandbox, Start: t0, Class: ClassTimeout, InFlight: true}
	c := Cycle{Calls: []CallResult{{Method: MethodVersion, Start: t0, Class: ClassOK}, list}}
	hung := Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(3 * time.Second), Class: ClassTimeout, InFlight: true}}
	got := c.WithBeat(hung)
	if findCall(t, got, MethodVersion).Class != ClassTimeout || findCall(t, got, MethodListPodSandbox).Class != ClassTimeout {
		t.Errorf("a newer hung beat: %+v", got.Calls)
	}
	if findCall(t, c, MethodVersion).Class != ClassOK {
		t.Error("WithBeat changed the cycle it was given")
	}
	healthy := Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(5 * time.Second), Class: ClassOK}}
	if obs := got.WithBeat(healthy).Observation(2 * time.Second); len(obs.HungCalls) != 1 {
		t.Errorf("a healthy beat must not clear a hung list call: %v", obs.HungCalls)
	}
	old := Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(-time.Second), Class: ClassTimeout}}
	if findCall(t, c.WithBeat(old), MethodVersion).Class != ClassOK {
		t.Error("an older beat replaced the cycle's Version")
	}
}

// TestAVersionStillOutStandsForACycleThatLeftItToTheHeartbeat: a Version
// call that stays hung is joined by every Version beat after it, so each
// reports the start of a call older than the cycles since. It still says
// Version is hung now; a cycle that left Version to the heartbeat must not
// drop it (a held Version went unreported for two minutes). A refused
// beat from before the cycle, which has returned, is dropped.
func TestAVersionStillOutStandsForACycleThatLeftItToTheHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 57, 0, 0, time.UTC)
	c := Cycle{Start: t0.Add(30 * time.Second), Calls: []CallResult{{Method: MethodListPodSandbox, Start: t0.Add(30 * time.Second), Class: ClassOK}}}
	stillOut := Beat{Call: CallResult{Method: MethodVersion, Start: t0, Duration: 35 * time.Second, Class: ClassTimeout, InFlight: true}}
	if obs := c.WithBeat(stillOut).Observation(2 * time.Second); len(obs.HungMethods) != 1 || obs.HungMethods[0] != MethodVersion {
		t.Errorf("a Version beat still out, older than the cycle: hung %v, want [Version]", obs.HungMethods)
	}
	returned := Beat{Call: CallResult{Method: MethodVersion, Start: t0, Class: ClassUnreachable}}
	if got := c.WithBeat(returned); len(got.Calls) != 1 {
		t.Errorf("a refused Version beat older than the cycle stood in for it: %+v", got.Calls)
	}
}

// TestARefusedBeatMakesTheRuntimeUnreachable: a restarted runtime's socket
// refuses the heartbeat between cycles; that is RuntimeUnreachable then,
// not a healthy cycle with one failed call.
func TestARefusedBeatMakesTheRuntimeUnreachable(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	c := Cycle{Start: t0, Calls: []CallResult{{Method: MethodVersion, Start: t0, Class: ClassOK},
		{Method: MethodListPodSandbox, Start: t0, Class: ClassOK}}}
	refused := Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(3 * time.Second), Class: ClassUnreachable}}
	if obs := c.WithBeat(refused).Observation(2 * time.Second); !obs.Unreachable {
		t.Errorf("a refused beat after the cycle: unreachable = %v", obs.Unreachable)
	}
	early := Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(-time.Second), Class: ClassUnreachable}}
	if obs := c.WithBeat(early).Observation(2 * time.Second); obs.Unreachable {
		t.Error("a refused beat older than the cycle overrode it")
	}
}

// TestAHungCallThatAnswersWakesTheCycles: once a call reported hung
// answers, Run looks again at once instead of after its back-off.
func TestAHungCallThatAnswersWakesTheCycles(t *testing.T) {
	f := critest.New(1, 1)
	f.Hang(MethodListPodSandbox)
	cfg := testConfig()
	p, clk, obs := newTestProber(f, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cycles := make(chan Cycle, 16)
	go p.Run(ctx, time.Hour, time.Hour, func(c Cycle) { cycles <- c })
	// 4 fixed calls and 2 Unimplemented streams answer; ListPodSandbox waits.
	clocktest.Await(t, "the hung call's wait", func() bool { return obs.probes.Load() >= 6 && clk.Waiters() >= 1 })
	clk.Step(cfg.Timeout + time.Second)
	if c := <-cycles; findCall(t, c, MethodListPodSandbox).Class != ClassTimeout {
		t.Fatalf("first cycle %+v, want ListPodSandbox hung", c.Calls)
	}
	f.ReleaseHung()
	select {
	case c := <-cycles:
		if findCall(t, c, MethodListPodSandbox).Class == ClassTimeout {
			t.Errorf("the woken cycle still saw ListPodSandbox hung: %+v", c.Calls)
		}
	case <-time.After(time.Minute): // a bound for a broken wake only; not a wait the test needs
		t.Fatal("the answered call did not wake the cycles")
	}
}

// TestASecondCallerWaitsForTheCallAlreadyOut: a heartbeat's Version sent
// while a cycle's is out, a few milliseconds old, is not a hang: it waits
// for that call's answer, up to the timeout from when it was sent.
func TestASecondCallerWaitsForTheCallAlreadyOut(t *testing.T) {
	f := critest.New(1, 1)
	f.Hang(MethodVersion)
	p, clk, _ := newTestProber(f, testConfig())
	version := func(ctx context.Context) (proto.Message, error) {
		return f.Version(ctx, &runtimeapi.VersionRequest{})
	}
	first, second := make(chan CallResult, 1), make(chan CallResult, 1)
	go func() { first <- p.invoke(context.Background(), MethodVersion, "", version) }()
	clocktest.Await(t, "the first call's wait", func() bool { return clk.Waiters() == 1 })
	clk.Step(500 * time.Millisecond)
	go func() { second <- p.invoke(context.Background(), MethodVersion, "", version) }()
	clocktest.Await(t, "the second caller's wait", func() bool { return clk.Waiters() == 2 })
	f.ReleaseHung()
	a, b := <-first, <-second
	if a.Class != ClassOK || b.Class != ClassOK || f.Count(MethodVersion) != 1 {
		t.Fatalf("joined an answered call: first %s, second %s, %d calls sent; want ok, ok, 1", a.Class, b.Class, f.Count(MethodVersion))
	}

	f.Hang(MethodVersion)
	go func() { first <- p.invoke(context.Background(), MethodVersion, "", version) }()
	clocktest.Await(t, "the first call's wait", func() bool { return clk.Waiters() == 1 })
	clk.Step(1500 * time.Millisecond)
	go func() { second <- p.invoke(context.Background(), MethodVersion, "", version) }()
	clocktest.Await(t, "the second caller's wait", func() bool { return clk.Waiters() == 2 })
	clk.Step(500 * time.Millisecond)
	a, b = <-first, <-second
	if a.Class != ClassTimeout || b.Class != ClassTimeout || b.Duration != 2*time.Second {
		t.Fatalf("a hung call: first %s, second %s after %v; want timeout, timeout after 2s", a.Class, b.Class, b.Duration)
	}
	f.ReleaseHung()
}

// TestAHungBeatWhoseCallAnsweredNoLongerStands: the heartbeat caught a
// freeze (its Version still out), the runtime thawed and the call
// answered; the cycle that answer wakes no longer carries the beat's
// hung Version, so RuntimeHung clears with the cycles' answers, not at
// the next Version beat (7.7 s after the thaw, against 2.7 s when a cycle
// had caught the freeze). A beat whose call is still out stands.
func TestAHungBeatWhoseCallAnsweredNoLongerStands(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	out := map[string]bool{MethodVersion: true}
	var seen Cycle
	v := &runtimeView{observe: func(c Cycle) { seen = c },
		runtimeAnswered: func(m string, _ time.Time) bool { return !out[m] }}
	v.onBeat(Beat{Call: CallResult{Method: MethodVersion, Start: t0, Duration: 3 * time.Second, Class: ClassTimeout, InFlight: true}})
	cycle := Cycle{Start: t0.Add(4 * time.Second), Calls: []CallResult{{Method: MethodListPodSandbox, Start: t0.Add(4 * time.Second), Class: ClassOK}}}
	v.onCycle(cycle)
	if obs := seen.Observation(2 * time.Second); len(obs.HungMethods) != 1 {
		t.Fatalf("Version still out: hung %v, want [Version]", obs.HungMethods)
	}
	out[MethodVersion] = false // it answered
	v.onCycle(cycle)
	if obs := seen.Observation(2 * time.Second); len(obs.HungMethods) != 0 {
		t.Fatalf("Version answered since the beat: hung %v, want none", obs.HungMethods)
	}
}

// TestAHungBeatWhoseConnectionClosedStillStands: the heartbeat caught a
// freeze; the frozen runtime is killed, and its Version call ends with the
// connection closing (Unavailable). That is no answer: the beat's hung
// Version stands, and the last cycle, healthy from before the freeze, does
// not clear RuntimeHung (the installs suite saw RuntimeResponsive for one
// cycle at the kill). The tracker's own word counts only the runtime's.
func TestAHungBeatWhoseConnectionClosedStillStands(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
	tr := newInflightTracker(clk)
	k := callKey{method: MethodVersion}
	t0 := clk.Now()
	tr.begin(k, t0)
	var seen Cycle
	v := &runtimeView{observe: func(c Cycle) { seen = c }, runtimeAnswered: tr.answeredSince}
	cycle := Cycle{Start: t0.Add(-10 * time.Second), Calls: []CallResult{{Method: MethodListPodSandbox, Start: t0.Add(-10 * time.Second), Class: ClassOK}}}
	v.onCycle(cycle)
	v.onBeat(Beat{Call: CallResult{Method: MethodVersion, Start: t0, Duration: 3 * time.Second, Class: ClassTimeout, InFlight: true}})
	clk.Step(20 * time.Second)
	tr.end(k, CallResult{Method: MethodVersion, Start: t0, Duration: 20 * time.Second, Class: ClassUnreachable,
		Err: "rpc error: code = Unavailable desc = error reading from server: EOF"})
	v.onCycle(cycle)
	if obs := seen.Observation(2 * time.Second); len(obs.HungMethods) != 1 {
		t.Fatalf("Version ended by its connection closing: hung %v, want [Version] to stand", obs.HungMethods)
	}
	k2 := callKey{method: MethodVersion}
	tr.begin(k2, clk.Now())
	tr.end(k2, CallResult{Method: MethodVersion, Class: ClassOK})
	v.onCycle(cycle)
	if obs := seen.Observation(2 * time.Second); len(obs.HungMethods) != 0 {
		t.Fatalf("Version answered by the runtime since: hung %v, want none", obs.HungMethods)
	}
}

// TestACycleRefusedEverywhereIsNotHealedByAnOlderBeat: the runtime frozen
// since t0, the list beat hung, then killed by repair. The cycle the
// kill wakes finds its socket refusing every call; the last Version beat
// answered before the freeze and the list beat's call, joined, returned
// refused at the kill, both older than the cycle. Neither may turn it
// healthy: that cleared RuntimeHung for a beat, which restarted remedy's
// wait for the fence (seen in the installs suite's ladder).
func TestACycleRefusedEverywhereIsNotHealedByAnOlderBeat(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 7, 14, 15, 0, time.UTC)
	v := &runtimeView{}
	var seen []observations.CRI
	v.observe = func(c Cycle) { seen = append(seen, c.Observation(2*time.Second)) }
	v.onCycle(Cycle{Start: t0.Add(-2 * time.Second), Calls: []CallResult{{Method: MethodListPodSandbox, Start: t0.Add(-2 * time.Second), Class: ClassOK}}})
	v.onBeat(Beat{Call: CallResult{Method: MethodVersion, Start: t0.Add(-time.Second), Class: ClassOK}})
	v.onBeat(Beat{Call: CallResult{Method: MethodListPodSandbox, Start: t0.Add(2 * time.Second), Class: ClassTimeout, InFlight: true}})
	killed := t0.Add(20 * time.Second)
	refused := func(m string) CallResult {
		return CallResult{Method: m, Start: killed, Class: ClassUnreachable, Err: "rpc error: code = Unavailable desc = connection refused"}
	}
	v.onBeat(Beat{Call: CallResult{Method: MethodListPodSandbox, Start: t0.Add(2 * time.Second), Duration: 18 * time.Second, Class: ClassUnreachable,
		Err: "rpc error: code = Unavailable desc = error reading from server: EOF"}})
	v.onCycle(Cycle{Start: killed, Calls: []CallResult{refused(MethodStatus), refused(MethodListPodSandbox), refused(MethodListContainers), refused(MethodImageFsInfo)}})
	v.onBeat(v.beats[MethodListPodSandbox]) // another input re-judges the same view
	for i, obs := range seen[3:] {
		if !obs.Unreachable {
			t.Errorf("judgement %d after the kill: unreachable=false, hung %v: healthy", i, obs.HungCalls)
		}
	}
}

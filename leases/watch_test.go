package leases

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/observations"
)

// scriptedProber answers what the test last set.
type scriptedProber struct {
	mu     sync.Mutex
	result string
}

func (p *scriptedProber) Probe(context.Context) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}

func (p *scriptedProber) set(r string) {
	p.mu.Lock()
	p.result = r
	p.mu.Unlock()
}

type watchFixture struct {
	*fixture
	prober *scriptedProber
	watch  *Watch
	reads  atomic.Int32
	got    chan observations.Lease
	nudge  chan struct{}
	stop   func()
}

// startWatch runs a Watch over the fixture's Lease: read every 5s, or
// every 2m while the kubelet answers, and probed every second.
func startWatch(t *testing.T, first string) *watchFixture {
	f := &watchFixture{fixture: newFixture(t, 40), prober: &scriptedProber{result: first}, got: make(chan observations.Lease, 100),
		nudge: make(chan struct{}, 1)}
	f.client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		f.reads.Add(1)
		return false, nil, nil
	})
	w := &Watch{Client: clientsetLeases{f.client}, Node: "node-a", Grace: 50 * time.Second, Period: 5 * time.Second,
		IdlePeriod: 2 * time.Minute, Clock: f.clk, Healthz: f.prober, HealthzPeriod: time.Second, Nudge: f.nudge}
	f.watch = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, func(m observations.Input) { f.got <- m.(observations.Lease) }) }()
	f.stop = func() { cancel(); <-done }
	t.Cleanup(f.stop)
	f.next()
	f.parked()
	return f
}

// next waits for the next input handed on.
func (f *watchFixture) next() observations.Lease {
	f.t.Helper()
	select {
	case m := <-f.got:
		return m
	case <-time.After(10 * time.Second):
		f.t.Fatal("no input handed on in 10s")
	}
	return observations.Lease{}
}

// parked waits for the reader to park on its timer beside the prober's
// ticker.
func (f *watchFixture) parked() {
	f.t.Helper()
	clocktest.AwaitWaiters(f.t, f.clk, 2)
}

// second steps the clock a second: one probe, and wantReads reads. It
// returns the input last handed on, which holds both.
func (f *watchFixture) second(wantReads int32) observations.Lease {
	f.t.Helper()
	before := f.reads.Load()
	f.clk.Step(time.Second)
	var m observations.Lease
	for range 1 + wantReads {
		m = f.next()
	}
	f.parked()
	if n := f.reads.Load() - before; n != wantReads {
		f.t.Fatalf("%d reads in a second, want %d", n, wantReads)
	}
	return m
}

// TestLeaseReadRarelyWhileTheKubeletAnswers: a kubelet that answers on the
// node and renews on time has its Lease read every IdlePeriod; one that
// stops answering is reported at the next probe, its Lease read at once
// and then every Period.
func TestLeaseReadRarelyWhileTheKubeletAnswers(t *testing.T) {
	f := startWatch(t, HealthzOK)
	for i := 0; i < 119; i++ {
		if i%10 == 0 {
			f.renew()
		}
		if m := f.second(0); m.Healthz != HealthzOK || m.KubeletSilent {
			t.Fatalf("second %d: %v", i+1, m)
		}
	}
	f.renew()
	f.second(1) // the 2m read
	f.prober.set(HealthzNoAnswer)
	if m := f.second(1); !m.KubeletSilent {
		t.Fatalf("a silent kubelet: %v", m)
	}
	for i := 0; i < 4; i++ {
		f.second(0)
	}
	f.second(1) // 5s later
}

// TestALeaseLateWhileTheKubeletAnswersIsHeld: a kubelet that answers on
// the node but whose renewals stop landing may be one of a whole fleet
// behind an overloaded API server: its Lease is still read every
// IdlePeriod, and held late until renewals have been on time for LateHold,
// so an API server that lets a renewal through now and then does not make
// it flap.
func TestALeaseLateWhileTheKubeletAnswersIsHeld(t *testing.T) {
	f := startWatch(t, HealthzOK)
	for i := 0; i < 119; i++ {
		f.second(0) // no renewal lands
	}
	if m := f.second(1); !m.LateWhileAnswering || m.MissedRenewals != 12 {
		t.Fatalf("the 2m read of a Lease unrenewed for 2m: %v", m)
	}
	held, sinceRead := 0, 0
	for {
		held++
		if held%10 == 1 {
			f.renew()
		}
		want := int32(0)
		if sinceRead++; sinceRead == 120 { // every IdlePeriod, late or not
			want, sinceRead = 1, 0
		}
		if m := f.second(want); !m.LateWhileAnswering {
			break
		}
	}
	// on time from the first read after the renewals resumed (2m), then
	// released at the first read 5m after that
	if d := time.Duration(held) * time.Second; d != 8*time.Minute {
		t.Fatalf("held %v after renewals came on time again, want 8m", d)
	}
}

// TestFailedReadsBackOff: reads that fail while the kubelet answers (an
// API server down or overloaded, perhaps for the whole fleet) back off
// from Period to IdlePeriod; a kubelet that stops answering is read every
// Period again.
func TestFailedReadsBackOff(t *testing.T) {
	w := &Watch{Period: 5 * time.Second, IdlePeriod: 2 * time.Minute, Healthz: &scriptedProber{}}
	down := Observation{ReadError: "timeout"}
	for failures, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 2 * time.Minute, 2 * time.Minute} {
		if failures == 0 {
			continue
		}
		if got := w.nextRead(down, failures, HealthzOK); got != want {
			t.Errorf("after %d failed reads: %v, want %v", failures, got, want)
		}
	}
	if got := w.nextRead(down, 5, HealthzNoAnswer); got != 5*time.Second {
		t.Errorf("a failed read of a kubelet that does not answer: next in %v, want 5s", got)
	}
	fresh := Observation{Readable: true, Found: true, RenewInterval: 10 * time.Second, RenewAge: 3 * time.Second}
	for healthz, want := range map[string]time.Duration{HealthzOK: 2 * time.Minute, HealthzUnhealthy: 5 * time.Second,
		HealthzRefused: 2 * time.Minute, HealthzError: 5 * time.Second, "": 5 * time.Second} {
		if got := w.nextRead(fresh, 0, healthz); got != want {
			t.Errorf("a fresh Lease, healthz %q: next in %v, want %v", healthz, got, want)
		}
	}
}

// TestARefusedHealthPortIsNotSilence: a kubelet whose health port refuses
// (healthzPort 0, or bound elsewhere) is watched as with no health probe:
// its Lease, renewed on time, is read every IdlePeriod, not every Period
// (24 reads in 2 minutes before, 1,000 GET/s at 5,000 nodes); it is never
// silent for repair; a probe that times out is, from its start.
func TestARefusedHealthPortIsNotSilence(t *testing.T) {
	f := startWatch(t, HealthzRefused)
	w := f.watch
	for i := 0; i < 119; i++ {
		if i%10 == 0 {
			f.renew()
		}
		if m := f.second(0); m.Healthz != HealthzRefused || m.KubeletSilent {
			t.Fatalf("second %d: %v", i+1, m)
		}
		if d := w.KubeletUnanswered(); d != 0 {
			t.Fatalf("refused, unanswered %v", d)
		}
	}
	f.renew()
	f.second(1) // the 2m read: the only one in 2 minutes
	f.prober.set(HealthzNoAnswer)
	f.second(1)
	f.second(0)
	if d := w.KubeletUnanswered(); d != time.Second {
		t.Fatalf("two probes unanswered, the first a second ago: %v", d)
	}
	f.prober.set(HealthzUnhealthy)
	f.second(0)
	if d := w.KubeletUnanswered(); d != 0 {
		t.Fatalf("answered (500): unanswered %v", d)
	}
}

func TestLateLatch(t *testing.T) {
	var l lateLatch
	late := Observation{Readable: true, RenewInterval: 10 * time.Second, RenewAge: 25 * time.Second}
	onTime := Observation{Readable: true, RenewInterval: 10 * time.Second, RenewAge: 3 * time.Second}
	for _, s := range []struct {
		o         Observation
		answering bool
		at        time.Duration
		want      bool
	}{
		{late, false, 0, false},                      // a kubelet that does not answer: its own trouble
		{onTime, true, time.Second, false},           // on time
		{late, true, 2 * time.Second, true},          // late while it answers
		{Observation{}, true, 3 * time.Second, true}, // an unreadable Lease says nothing
		{onTime, true, 4 * time.Second, true},
		{onTime, true, 4*time.Second + LateHold - 1, true},
		{late, true, 5 * time.Second, true}, // late again: the hold starts over
		{onTime, true, 6 * time.Second, true},
		{onTime, true, 6*time.Second + LateHold, false},
	} {
		if got := l.update(s.o, s.answering, t0.Add(s.at)); got != s.want {
			t.Fatalf("at %v: %v, want %v", s.at, got, s.want)
		}
	}
}

// TestANudgeReadsTheLeaseTwice: when the kubelet's own metrics say its
// renewals fail, the Lease is read at once and again when it would be 2
// renewals late, which tells; another nudge within IdlePeriod is not taken.
func TestANudgeReadsTheLeaseTwice(t *testing.T) {
	f := startWatch(t, HealthzOK) // renewed 3s before the first read, never again
	for i := 0; i < 9; i++ {
		f.second(0)
	}
	before := f.reads.Load()
	f.nudge <- struct{}{}
	if m := f.next(); m.RenewAgeSeconds != 12.0 || m.LateWhileAnswering {
		t.Fatalf("the nudged read: %v", m)
	}
	f.parked()
	if n := f.reads.Load() - before; n != 1 {
		t.Fatalf("%d reads on a nudge, want 1", n)
	}
	for i := 0; i < 8; i++ {
		f.second(0)
	}
	if m := f.second(1); !m.LateWhileAnswering {
		t.Fatalf("read when 2 renewals late (9s later): %v", m)
	}
	f.nudge <- struct{}{} // within IdlePeriod of the last: not taken
	for i := 0; i < 10; i++ {
		f.second(0)
	}
}

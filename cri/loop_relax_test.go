package cri

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/critest"
)

// TestRelaxEndsABackOffAPeriodAfterItBegan: a beat that answers on time
// after slow ones calls the cycles' back-off off: the next cycle comes a
// period after the last one, not the minute the back-off had reached.
func TestRelaxEndsABackOffAPeriodAfterItBegan(t *testing.T) {
	p, clk, _ := newTestProber(critest.New(1, 1), testConfig())
	type paused struct {
		wait time.Duration
		at   time.Time
	}
	done := make(chan paused, 1)
	began := clk.Now()
	go func() {
		wait, _ := p.pause(context.Background(), time.Minute, 5*time.Second)
		done <- paused{wait, clk.Now()}
	}()
	clocktest.Await(t, "the pause", sleepingLoops(p, clk, 1))
	clk.Step(2 * time.Second)
	p.Relax()
	// to the period's end and no further: the pause reads the clock when
	// it ends, and a step past it would be read as a later end
	clk.Step(3 * time.Second)
	var got paused
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the pause did not end at its period's end")
	}
	if got.wait != 5*time.Second || got.at.Sub(began) != 5*time.Second {
		t.Fatalf("relaxed pause ended after %v with wait %v; want a period, 5s", got.at.Sub(began), got.wait)
	}
}

// TestRelaxLeavesThePeriodAlone: outside a back-off, Relax does nothing.
func TestRelaxLeavesThePeriodAlone(t *testing.T) {
	p, clk, _ := newTestProber(critest.New(1, 1), testConfig())
	p.Relax()
	done := make(chan time.Duration, 1)
	began := clk.Now()
	go func() {
		_, _ = p.pause(context.Background(), 5*time.Second, 5*time.Second)
		done <- clk.Since(began)
	}()
	clocktest.StepUntil(t, clk, 1, time.Second, time.Minute, "the pause's end", func() bool { return len(done) == 1 })
	if took := <-done; took != 5*time.Second {
		t.Fatalf("pause took %v, want the period", took)
	}
}

func TestABeatIsJudgedAgainstTheLastOfItsKind(t *testing.T) {
	last := map[string]Class{}
	beat := func(method string, class Class) Beat {
		return judgeBeat(CallResult{Method: method, Class: class}, last)
	}
	steps := []struct {
		method           string
		class            Class
		recovered, eased bool
	}{
		{MethodVersion, ClassOK, false, false},
		{MethodListPodSandbox, ClassSlow, false, false},
		{MethodVersion, ClassOK, false, false}, // not eased: Version was not slow
		{MethodListPodSandbox, ClassOK, false, true},
		{MethodListPodSandbox, ClassTimeout, false, false},
		{MethodVersion, ClassOK, false, false}, // not recovered: Version did not fail
		{MethodListPodSandbox, ClassSlow, true, false},
	}
	for i, s := range steps {
		if b := beat(s.method, s.class); b.Recovered != s.recovered || b.Eased != s.eased {
			t.Errorf("step %d (%s %s): recovered %v eased %v, want %v %v", i, s.method, s.class, b.Recovered, b.Eased, s.recovered, s.eased)
		}
	}
}

// TestTheListBeatKeepsTheTurnWhileTheListPathIsSlow: Version and the list
// beat take turns, but a slow or hung list beat is followed by another.
func TestTheListBeatKeepsTheTurnWhileTheListPathIsSlow(t *testing.T) {
	last := map[string]Class{}
	var got []string
	for n, class := range []Class{ClassOK, ClassOK, ClassOK, ClassSlow, ClassSlow, ClassTimeout, ClassOK, ClassOK, ClassError, ClassOK} {
		m := beatMethod(n, last)
		got = append(got, m)
		if m == MethodListPodSandbox {
			last[m] = class
		}
	}
	want := []string{MethodVersion, MethodListPodSandbox, MethodVersion, MethodListPodSandbox, MethodListPodSandbox,
		MethodListPodSandbox, MethodListPodSandbox, MethodListPodSandbox, MethodVersion, MethodListPodSandbox}
	if !slices.Equal(got, want) {
		t.Fatalf("beats %v, want %v", got, want)
	}
}

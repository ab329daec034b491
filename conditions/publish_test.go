package conditions_test

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/observations"
)

// TestEveryJudgementIsPublishedInOrder: a subscriber is handed the state
// when it subscribes, then every observation judged (a change or not),
// and the restore with the Node's conditions.
func TestEveryJudgementIsPublishedInOrder(t *testing.T) {
	e, clk := newDefaultEngine(t, "cri")
	var heard []conditions.Judgement
	e.Subscribe(conditions.SubscriberFunc(func(j conditions.Judgement) { heard = append(heard, j) }))
	hung := cri.Cycle{Calls: []cri.CallResult{{Method: "Status", Class: cri.ClassTimeout}}}.Observation(2 * time.Second)
	e.Observe(hung)
	clk.Step(time.Second)
	e.Observe(hung)
	onNode := []conditions.Condition{{Type: conditions.TypeRuntimeHung, Status: conditions.StatusFalse, Reason: "RuntimeResponsive"}}
	e.Restore(onNode)
	want := []conditions.Cause{conditions.CauseSubscribed, conditions.CauseObserved, conditions.CauseObserved, conditions.CauseRestored}
	if len(heard) != len(want) {
		t.Fatalf("heard %d judgements, want %d: %+v", len(heard), len(want), heard)
	}
	for i, j := range heard {
		if j.Cause != want[i] || len(j.Conditions) != 1 || j.Conditions[0].Type != conditions.TypeRuntimeHung {
			t.Errorf("judgement %d: %+v, want %s with the one condition", i, j, want[i])
		}
	}
	if c := heard[1].Changes; heard[1].Input != observations.NameCRI || len(c) != 1 || c[0].Before.Status != conditions.StatusUnknown || c[0].After.Status != conditions.StatusTrue {
		t.Errorf("the first observation: %+v, want cri's move from Unknown to True", heard[1])
	}
	if j := heard[2]; len(j.Changes) != 0 || !j.Conditions[0].LastProbeTime.Equal(clk.Now()) {
		t.Errorf("the second observation: %+v, want no change and the probe time now", j)
	}
	if j := heard[3]; len(j.OnNode) != 1 || j.Conditions[0].Status != conditions.StatusTrue {
		t.Errorf("the restore: %+v, want the Node's conditions and RuntimeHung kept True (this process's own evidence)", j)
	}
}

// TestLatestWakesOnceForManyChanges: the latest state is kept without
// waiting for its reader, whose wake coalesces.
func TestLatestWakesOnceForManyChanges(t *testing.T) {
	e, _ := newDefaultEngine(t, "cri")
	var l conditions.Latest
	e.Subscribe(&l)
	select {
	case <-l.Wake():
		t.Fatal("woken by the state at subscription")
	default:
	}
	for _, class := range []cri.Class{cri.ClassTimeout, cri.ClassOK, cri.ClassOK, cri.ClassTimeout} {
		e.Observe(cri.Cycle{Calls: []cri.CallResult{{Method: "Status", Class: class}}}.Observation(2 * time.Second))
	}
	<-l.Wake()
	select {
	case <-l.Wake():
		t.Fatal("woken twice for changes read once")
	default:
	}
	if c := l.Conditions(); len(c) != 1 || c[0].Status != conditions.StatusTrue {
		t.Fatalf("latest %+v, want RuntimeHung True", c)
	}
}

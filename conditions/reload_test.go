package conditions_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/observations"
)

// containersSpec raises at once when cri.containers passes over.
func containersSpec(condType string, over int) conditions.Spec {
	return conditions.Spec{Type: condType,
		Problems: []conditions.Problem{{When: "cri.containers > " + strconv.Itoa(over),
			Outcome: conditions.Outcome{Reason: "ManyContainers", Message: "many containers"}}},
		Healthy: conditions.Outcome{Reason: "FewContainers"}}
}

// TestReloadKeepsUnchangedAndReevaluatesChangedRules: an unchanged rule
// keeps its condition and transition time; a changed one is evaluated at
// once from the last observation; a new one likewise; a dropped one
// leaves the set.
func TestReloadKeepsUnchangedAndReevaluatesChangedRules(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	var moves []string
	e, err := conditions.NewEngine([]conditions.Spec{containersSpec("Kept", 10), containersSpec("Edited", 500), containersSpec("Dropped", 10)},
		clk, conditions.EngineOptions{Available: conditions.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	e.Subscribe(conditions.SubscriberFunc(func(j conditions.Judgement) {
		for _, c := range j.Changes {
			moves = append(moves, c.After.Type+":"+string(c.After.Status))
		}
	}))
	e.Observe(observations.CRI{Containers: 20})
	kept := condition(t, e, "Kept")
	if kept.Status != conditions.StatusTrue || condition(t, e, "Edited").Status != conditions.StatusFalse {
		t.Fatalf("before the reload: %+v", e.Set().Snapshot())
	}
	clk.Step(time.Minute)
	moves = nil
	res, err := e.Reload([]conditions.Spec{containersSpec("Kept", 10), containersSpec("Edited", 0), containersSpec("Added", 0)}, observations.Params{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join([]string{strings.Join(res.Kept, ","), strings.Join(res.Changed, ","), strings.Join(res.Added, ","), strings.Join(res.Removed, ",")}, " | ")
	if got != "Kept | Edited | Added | Dropped" {
		t.Fatalf("reload result %q", got)
	}
	if c := condition(t, e, "Kept"); c.Status != conditions.StatusTrue || !c.LastTransitionTime.Equal(kept.LastTransitionTime) {
		t.Fatalf("unchanged rule's condition %+v, want it as before (%v)", c, kept.LastTransitionTime)
	}
	for _, ty := range []string{"Edited", "Added"} {
		if c := condition(t, e, ty); c.Status != conditions.StatusTrue || !c.LastTransitionTime.Equal(clk.Now()) {
			t.Fatalf("%s after the reload %+v, want True at once from the last observation", ty, c)
		}
	}
	if strings.Join(e.Set().Types(), ",") != "Added,Edited,Kept" {
		t.Fatalf("types %v, want Dropped gone", e.Set().Types())
	}
	if strings.Join(moves, ",") != "Added:True,Edited:True" && strings.Join(moves, ",") != "Edited:True,Added:True" {
		t.Fatalf("changes told %v", moves)
	}
}

func TestReloadRefusesABadRuleAndKeepsRunning(t *testing.T) {
	e, err := conditions.NewEngine([]conditions.Spec{containersSpec("Kept", 10)}, testclock.NewFakeClock(t0),
		conditions.EngineOptions{Available: conditions.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	bad := containersSpec("Kept", 10)
	bad.Problems[0].When = "cri.containers >"
	if _, err := e.Reload([]conditions.Spec{bad}, observations.Params{}); err == nil || !strings.Contains(err.Error(), "problems[0].when") {
		t.Fatalf("error %v, want the field path", err)
	}
	e.Observe(observations.CRI{Containers: 20})
	if c := condition(t, e, "Kept"); c.Status != conditions.StatusTrue {
		t.Fatalf("the running rule after a refused reload: %+v", c)
	}
}

package conditions_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/observations"
)

func TestConditionsStartUnknownAndOnlyAvailableOnesAreOwned(t *testing.T) {
	e, _ := newDefaultEngine(t, "cri", "lease")
	if got := strings.Join(e.Set().Types(), ","); got != "KubeletUnresponsive,RuntimeHung" {
		t.Fatalf("owned %s: KernelDeadlock must be dropped without the kernel input", got)
	}
	for _, c := range e.Set().Snapshot() {
		if c.Status != conditions.StatusUnknown || c.Reason != conditions.ReasonNoData {
			t.Fatalf("%s starts %s/%s, want Unknown", c.Type, c.Status, c.Reason)
		}
	}
	e.Observe(observations.CRI{FixedMethods: 5, Timeout: "2s"})
	if c := condition(t, e, conditions.TypeKubeletUnresponsive); c.Status != conditions.StatusUnknown {
		t.Fatalf("a cri observation moved %s", c.Type)
	}
}

func customSpec() conditions.Spec {
	return conditions.Spec{Type: "ContainersPiling",
		Problems: []conditions.Problem{{When: "cri.containers > 500",
			Outcome: conditions.Outcome{Reason: "TooManyContainers", MessageExpression: `"more than 500 containers"`}}},
		Healthy:    conditions.Outcome{Reason: "ContainersFew"},
		RaiseAfter: 2, ClearAfter: 1, MinDuration: metav1.Duration{Duration: 30 * time.Second}}
}

func TestUserConditionWithThresholdsAndMinDuration(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	var moves []string
	e, err := conditions.NewEngine([]conditions.Spec{customSpec()}, clk, conditions.EngineOptions{Available: conditions.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	e.Subscribe(conditions.SubscriberFunc(func(j conditions.Judgement) {
		for _, c := range j.Changes {
			moves = append(moves, string(c.Before.Status)+">"+string(c.After.Status))
		}
	}))
	many := observations.CRI{Containers: 600}
	want := []conditions.Status{conditions.StatusUnknown, conditions.StatusUnknown, conditions.StatusUnknown, conditions.StatusTrue}
	for i, w := range want { // bad at 0s, 10s, 20s, 30s: the streak lasts 30s at the 4th
		e.Observe(many)
		if c := condition(t, e, "ContainersPiling"); c.Status != w {
			t.Fatalf("evaluation %d: %s, want %s", i, c.Status, w)
		}
		clk.Step(10 * time.Second)
	}
	e.Observe(observations.CRI{Containers: 3})
	if c := condition(t, e, "ContainersPiling"); c.Status != conditions.StatusFalse || c.Reason != "ContainersFew" {
		t.Fatalf("got %+v", c)
	}
	if got := strings.Join(moves, " "); got != "Unknown>True True>False" {
		t.Fatalf("changes %q", got)
	}
}

func TestRestoreCarriesOnTheNodesConditions(t *testing.T) {
	e, clk := newDefaultEngine(t, "cri")
	ltt := t0.Add(-time.Hour)
	took := e.Set().Restore([]conditions.Condition{{Type: conditions.TypeRuntimeHung, Status: conditions.StatusTrue,
		Reason: "ListPodSandboxHung", Message: "old", LastTransitionTime: ltt}, {Type: "Ready", Status: conditions.StatusTrue}}, clk.Now())
	if len(took) != 1 {
		t.Fatalf("took %v", took)
	}
	healthy := observations.CRI{FixedMethods: 5, Timeout: "2s"}
	e.Observe(healthy) // clearAfter is 2: one good cycle is not enough
	if c := condition(t, e, conditions.TypeRuntimeHung); c.Status != conditions.StatusTrue || !c.LastTransitionTime.Equal(ltt) {
		t.Fatalf("after one good cycle: %+v", c)
	}
	clk.Step(time.Second)
	e.Observe(healthy)
	if c := condition(t, e, conditions.TypeRuntimeHung); c.Status != conditions.StatusFalse || !c.LastTransitionTime.Equal(clk.Now()) {
		t.Fatalf("after two good cycles: %+v", c)
	}
}

func TestCompileErrorsNameTheField(t *testing.T) {
	bad := customSpec()
	bad.Problems[0].When = "cri.containers +"
	bad.Healthy = conditions.Outcome{ReasonExpression: "1 + 2"}
	other := conditions.Spec{Type: "lower", Problems: []conditions.Problem{{When: "true", Outcome: conditions.Outcome{Reason: "Bad Reason"}}}}
	err := conditions.CompileSpecs([]conditions.Spec{bad, other, {Type: "Ready", Disabled: true}}, conditions.DefaultParams(), nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"conditions[0].problems[0].when:", "conditions[0].healthy.reasonExpression: gives int, want string",
		`conditions[1].type: "lower"`, `conditions[1].problems[0].reason: "Bad Reason"`, `conditions[2].type: "Ready"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestAFailingRuleKeepsTheConditionAndDoesNotPanic(t *testing.T) {
	s := customSpec()
	s.RaiseAfter, s.MinDuration = 1, metav1.Duration{}
	s.Problems[0].When = `cri.containers > 500 || cri.hungCalls[0] == "x"`
	e, err := conditions.NewEngine([]conditions.Spec{s}, testclock.NewFakeClock(t0), conditions.EngineOptions{Available: conditions.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(observations.CRI{Containers: 600})
	e.Observe(observations.CRI{Containers: 1}) // no hung call to index: an evaluation error
	if c := condition(t, e, "ContainersPiling"); c.Status != conditions.StatusTrue {
		t.Fatalf("got %+v", c)
	}
}

func TestMergeSpecs(t *testing.T) {
	merged := conditions.MergeSpecs(conditions.DefaultSpecs(), []conditions.Spec{
		{Type: conditions.TypeKernelDeadlock, Disabled: true}, customSpec(),
		{Type: conditions.TypeRuntimeHung, ClearAfter: 5, Problems: []conditions.Problem{{When: "cri.unreachable", Outcome: conditions.Outcome{Reason: "Gone"}}},
			Healthy: conditions.Outcome{Reason: "Fine"}}})
	var types []string
	for _, s := range merged {
		types = append(types, s.Type)
	}
	if got := strings.Join(types, ","); got != "RuntimeHung,KubeletUnresponsive,PLEGUnhealthy,PodStartStuck,ContainersPiling" {
		t.Fatalf("types %s", got)
	}
	if merged[0].ClearAfter != 5 {
		t.Fatal("the override did not replace the default")
	}
	if err := conditions.CompileSpecs(merged, conditions.DefaultParams(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestMessagesAndReasonsAreBounded: a messageExpression that gives a
// megabyte is cut to MaxMessageBytes on a character boundary; a literal
// message over it is refused when the rule is compiled.
func TestMessagesAndReasonsAreBounded(t *testing.T) {
	spec := conditions.Spec{Type: "Huge", Problems: []conditions.Problem{{When: "cri.containers > 0",
		Outcome: conditions.Outcome{Reason: "Big", MessageExpression: `string(cri.hungCalls[0])`}}},
		Healthy: conditions.Outcome{Reason: "Fine"}}
	e, err := conditions.NewEngine([]conditions.Spec{spec}, testclock.NewFakeClock(t0), conditions.EngineOptions{Available: conditions.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(observations.CRI{Containers: 1, HungCalls: []string{strings.Repeat("é", 1<<19)}})
	c := condition(t, e, "Huge")
	if c.Status != conditions.StatusTrue || len(c.Message) > conditions.MaxMessageBytes || !strings.HasSuffix(c.Message, "é...") {
		t.Fatalf("got %s, %d bytes ending %q", c.Status, len(c.Message), c.Message[len(c.Message)-8:])
	}
	if _, err := conditions.NewEngine([]conditions.Spec{{Type: "Long", Problems: []conditions.Problem{{When: "true",
		Outcome: conditions.Outcome{Reason: "R", Message: strings.Repeat("m", 2000)}}}, Healthy: conditions.Outcome{Reason: "Ok"}}},
		testclock.NewFakeClock(t0), conditions.EngineOptions{Available: conditions.Inputs}); err == nil || !strings.Contains(err.Error(), "2000 bytes, at most 1024") {
		t.Fatalf("a 2000-byte literal message: %v", err)
	}
}

package conditions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/observations"
)

// TestAMisspelledFieldIsRefusedWithItsPathAndRule: the inputs are typed,
// so a field no input has, or a comparison of the wrong types, does not
// compile; the error names the field's path, the rule and the nearest
// field that exists.
func TestAMisspelledFieldIsRefusedWithItsPathAndRule(t *testing.T) {
	cases := map[string][]string{
		"cri.containres > 0": {"conditions[0].problems[0].when", "rule TooManyContainers", "undefined field 'containres'",
			"did you mean cri.containers?"},
		`lease.healthz == 1`:                  {"rule TooManyContainers", "no matching overload"},
		`size(cri.hungCalls) > 0 && cri.slow`: {"undefined field 'slow'"},
		`pleg.lastSeenAge > 60.0`:             {"undefined field 'lastSeenAge'"},
		`kernel.KernelDeadlock.actve`:         {"undefined field 'actve'", "did you mean kernel.<ConditionType>.active?"},
		`params.leaseShare > 0.0`:             {"undefined field 'leaseShare'"},
	}
	for when, wants := range cases {
		spec := Spec{Type: "TooManyContainers", Problems: []Problem{{When: when, Outcome: Outcome{Reason: "Many"}}},
			Healthy: Outcome{Reason: "Few"}}
		err := CompileSpecs([]Spec{spec}, DefaultParams(), nil)
		if err == nil {
			t.Errorf("%s compiled", when)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", when, w, err)
			}
		}
	}
}

// TestUnknownFiguresAreTestedWithHas: pleg's figures that may be unknown
// are unset, not zero, so has() tells them apart.
func TestUnknownFiguresAreTestedWithHas(t *testing.T) {
	spec := Spec{Type: "StaleGauge", Problems: []Problem{{When: "has(pleg.lastSeenAgeSeconds) && pleg.lastSeenAgeSeconds >= 0.0",
		Outcome: Outcome{Reason: "Known"}}}, Healthy: Outcome{Reason: "Unknown"}}
	e, err := NewEngine([]Spec{spec}, testclock.NewFakeClock(t0), EngineOptions{Available: Inputs})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(observations.PLEG{Verdict: "Healthy"})
	if c := conditionOf(t, e, "StaleGauge"); c.Status != StatusFalse {
		t.Fatalf("without the figure: %+v", c)
	}
	zero := 0.0
	e.Observe(observations.PLEG{Verdict: "Healthy", LastSeenAgeSeconds: &zero})
	if c := conditionOf(t, e, "StaleGauge"); c.Status != StatusTrue {
		t.Fatalf("with a figure of 0: %+v", c)
	}
}

// TestRelistSlowCountsAfterParamsSlowFor: the built-in PLEGUnhealthy rule
// counts RelistSlow once it has lasted params.plegSlowFor (pleg.slowFor),
// a stall at once, and a healthy look in between starts the slow run over.
func TestRelistSlowCountsAfterParamsSlowFor(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	e, err := NewEngine(DefaultSpecs(), clk, EngineOptions{Available: []string{InputPLEG},
		Params: observations.Params{PLEGSlowFor: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	look := func(verdict, reason string, after time.Duration) Condition {
		t.Helper()
		clk.Step(after)
		e.Observe(observations.PLEG{Verdict: verdict, Reason: reason, Message: reason + " seen"})
		return conditionOf(t, e, TypePLEGUnhealthy)
	}
	steps := []struct {
		verdict, reason string
		after           time.Duration
		want            Status
	}{
		{"Unhealthy", ReasonRelistSlow, 0, StatusFalse},
		{"Unhealthy", ReasonRelistSlow, time.Minute, StatusFalse},
		{"Healthy", "RelistHealthy", 10 * time.Second, StatusFalse},
		{"Unhealthy", ReasonRelistSlow, 10 * time.Second, StatusFalse}, // starts over
		{"Unhealthy", ReasonRelistSlow, 119 * time.Second, StatusFalse},
		{"Unhealthy", ReasonRelistSlow, time.Second, StatusTrue},
		{"Healthy", "RelistHealthy", time.Second, StatusTrue}, // clearAfter 2
		{"Healthy", "RelistHealthy", time.Second, StatusFalse},
		{"Unhealthy", "RelistStalled", time.Second, StatusTrue}, // never held
	}
	for i, s := range steps {
		if c := look(s.verdict, s.reason, s.after); c.Status != s.want {
			t.Fatalf("step %d (%s after %v): %+v, want %s", i, s.reason, s.after, c, s.want)
		}
	}
}

// TestLeaseShareIsAParamOfTheBuiltInRule: with params.leaseGraceShare
// set, NodeLeaseNotRenewed rises once that share of the grace period has
// passed, not after 2 missed renewals.
func TestLeaseShareIsAParamOfTheBuiltInRule(t *testing.T) {
	e, err := NewEngine(DefaultSpecs(), testclock.NewFakeClock(t0), EngineOptions{Available: []string{InputLease},
		Params: observations.Params{LeaseGraceShare: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	lease := func(age float64) Condition {
		e.Observe(observations.Lease{Readable: true, Found: true, Healthz: "ok", RenewAgeSeconds: age, RenewIntervalSeconds: 10,
			GraceSeconds: 50, MissedRenewals: int(age / 10)})
		return conditionOf(t, e, TypeKubeletUnresponsive)
	}
	if c := lease(21); c.Status != StatusFalse {
		t.Fatalf("2 missed renewals, under half the grace: %+v", c)
	}
	c := lease(25)
	if c.Status != StatusTrue || c.Reason != ReasonNodeLeaseNotRenewed ||
		c.Message != "the kubelet has not renewed its node Lease for 50% of the grace period; "+
			"the node lifecycle controller marks the node Unknown 50s after the last renewal" {
		t.Fatalf("half the grace: %+v", c)
	}
}

func TestMinDurationExpressionReadsOnlyParams(t *testing.T) {
	spec := func(p Problem) Spec {
		p.When, p.Reason = "cri.containers > 1", "Many"
		return Spec{Type: "Piling", Problems: []Problem{p}, Healthy: Outcome{Reason: "Few"}}
	}
	cases := map[string]Problem{
		"minDurationExpression: reads [cri]":          {MinDurationExpression: "duration(string(cri.containers) + 's')"},
		"set minDuration or minDurationExpression":    {MinDuration: metav1.Duration{Duration: time.Second}, MinDurationExpression: "params.plegSlowFor"},
		"gives double, want google.protobuf.Duration": {MinDurationExpression: "params.leaseGraceShare"},
		`"24h2m0s" must be from 0 to 24h0m0s`:         {MinDurationExpression: "params.plegSlowFor + duration('24h')"},
	}
	for want, p := range cases {
		if err := CompileSpecs([]Spec{spec(p)}, DefaultParams(), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", p, err, want)
		}
	}
}

// TestReloadStartsOverTheRulesThatReadChangedParams: a rule reading params
// is changed when they change; one that does not is kept.
func TestReloadStartsOverTheRulesThatReadChangedParams(t *testing.T) {
	e, err := NewEngine(DefaultSpecs(), testclock.NewFakeClock(t0), EngineOptions{Available: Inputs, Params: DefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Reload(DefaultSpecs(), observations.Params{LeaseGraceShare: 0.5, PLEGSlowFor: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Changed, ",") != "KubeletUnresponsive,PLEGUnhealthy" || strings.Join(res.Kept, ",") != "KernelDeadlock,PodStartStuck,RuntimeHung" {
		t.Fatalf("reload with a new share: %+v", res)
	}
	if res, _ = e.Reload(DefaultSpecs(), observations.Params{LeaseGraceShare: 0.5, PLEGSlowFor: 2 * time.Minute}); len(res.Changed) != 0 {
		t.Fatalf("the same params again: %+v", res)
	}
}

func conditionOf(t *testing.T, e *Engine, condType string) Condition {
	t.Helper()
	for _, c := range e.Set().Snapshot() {
		if c.Type == condType {
			return c
		}
	}
	t.Fatalf("no condition %s", condType)
	return Condition{}
}

// TestAKernelConditionTheKernelRulesDoNotRaiseIsRefused: with the kernel
// rules' condition types known, kernel.<Type> and kernel["<Type>"] must
// name one of them; unknown (nil), nothing is checked.
func TestAKernelConditionTheKernelRulesDoNotRaiseIsRefused(t *testing.T) {
	known := []string{TypeKernelDeadlock, "FrequentOOM"}
	for when, bad := range map[string]bool{
		"kernel.KernelDeadlock.active":                          false,
		`kernel["FrequentOOM"].active`:                          false,
		"kernel.KernelDedlock.active":                           true,
		`kernel["KernelDedlock"].matches > 0`:                   true,
		`cri.containers > 0 && kernel.FrequentOOMs.matches > 3`: true,
	} {
		spec := Spec{Type: "Custom", Problems: []Problem{{When: when, Outcome: Outcome{Reason: "Bad"}}}, Healthy: Outcome{Reason: "Good"}}
		err := CompileSpecs([]Spec{spec}, DefaultParams(), known)
		if (err != nil) != bad || (bad && !strings.Contains(err.Error(), "the kernel rules raise no condition")) {
			t.Errorf("%s: %v", when, err)
		}
		if err := CompileSpecs([]Spec{spec}, DefaultParams(), nil); err != nil {
			t.Errorf("%s with the kernel rules unknown: %v", when, err)
		}
	}
}

package kernellog

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestAFindingHoldsItsConditionForTheBoot: a node-local check's finding
// makes a condition the rules own active with its own reason and message,
// published at once; no quiet window clears it, a silenced reason turns it
// off, and an Xid raised before it keeps the condition's reason.
func TestAFindingHoldsItsConditionForTheBoot(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	var published []ConditionState
	m, err := NewMonitor([]*RuleSet{gpuPack(t)}, clk, Options{OnCondition: func(st ConditionState) { published = append(published, st) }})
	if err != nil {
		t.Fatal(err)
	}
	f := Finding{Condition: "GPUDegraded", Reason: "GPUCountDropped", Message: "1 NVIDIA GPUs on the PCI bus where 2 were before; missing: 0000:87:00.0"}
	if err := m.Raise(f); err != nil {
		t.Fatal(err)
	}
	if len(published) != 1 || published[0].Type != "GPUDegraded" || !published[0].Active {
		t.Fatalf("published %+v, want GPUDegraded active", published)
	}
	if c := m.Conditions()[1]; c.Reason != f.Reason || c.Message != f.Message || c.Count != 1 {
		t.Errorf("GPUDegraded = %+v, want the finding's reason and message", c)
	}
	clk.Step(30 * 24 * time.Hour)
	m.Expire()
	if c := m.Conditions()[1]; !c.Active {
		t.Errorf("a month later GPUDegraded = %+v, want it active until the boot ends", c)
	}
	m.SetSilenced([]string{"GPUCountDropped"})
	if c := m.Conditions()[1]; c.Active {
		t.Errorf("silenced, GPUDegraded = %+v, want inactive", c)
	}
	m.SetSilenced(nil)

	m2, err := NewMonitor([]*RuleSet{gpuPack(t)}, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m2.Handle(Record{Time: clk.Now().Add(-time.Minute), Message: "NVRM: Xid (PCI:0000:07:00): 94, pid=12801, name=python, Contained: SM (0x1). RST: No, D-RST: No"})
	if err := m2.Raise(f); err != nil {
		t.Fatal(err)
	}
	if c := m2.Conditions()[1]; c.Reason != "GPUContainedECCError" || c.Count != 2 {
		t.Errorf("GPUDegraded = %+v, want the older Xid's reason, both counted", c)
	}
}

func TestAFindingNeedsAConditionTheRulesOwn(t *testing.T) {
	m, err := NewMonitor([]*RuleSet{DefaultRuleSet()}, clocktesting.NewFakeClock(time.Now()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[Finding]string{
		{Condition: "GPUDegraded", Reason: "GPUCountDropped"}: `condition "GPUDegraded" is not one the kernel rules own (KernelDeadlock)`,
		{Condition: "KernelDeadlock", Reason: "not camel"}:    `finding for KernelDeadlock: reason "not camel"`,
	} {
		if err := m.Raise(f); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Raise(%+v) = %v, want an error with %q", f, err, want)
		}
	}
}

package kernellog

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type recorder struct {
	events []Event
	conds  []ConditionState
}

func newTestMonitor(t *testing.T, rules string) (*Monitor, *clocktesting.FakeClock, *recorder) {
	t.Helper()
	set, err := ParseRuleSet([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	rec := &recorder{}
	m, err := NewMonitor([]*RuleSet{set}, clk, Options{
		OnEvent:     func(e Event) { rec.events = append(rec.events, e) },
		OnCondition: func(c ConditionState) { rec.conds = append(rec.conds, c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, clk, rec
}

func line(clk *clocktesting.FakeClock, msg string) Record {
	return Record{Message: msg, Time: clk.Now()}
}

const hungRules = `{"source": "t", "conditions": [{"type": "KernelDeadlock", "reason": "KernelHasNoDeadlock", "message": "kernel has no deadlock"}],
 "rules": [
  {"type": "permanent", "condition": "KernelDeadlock", "reason": "ContainerRuntimeTaskBlocked",
   "pattern": "task containerd:\\d+ blocked for more than \\d+ seconds\\.", "clearAfter": "10m",
   "recoveryPattern": "containerd recovered"},
  {"type": "temporary", "reason": "OOMKilling", "pattern": "Killed process \\d+ .*"},
  {"type": "temporary", "reason": "Flaky", "pattern": "flaky thing", "minCount": 3, "window": "1m"}]}`

func TestPermanentRuleRaisesAndQuietWindowClears(t *testing.T) {
	m, clk, rec := newTestMonitor(t, hungRules)
	if c := m.Conditions()[0]; c.Active || c.Reason != "KernelHasNoDeadlock" {
		t.Fatalf("initial = %+v", c)
	}
	m.Handle(line(clk, "INFO: task containerd:1 blocked for more than 120 seconds."))
	clk.Step(2 * time.Minute)
	m.Handle(line(clk, "INFO: task containerd:2 blocked for more than 240 seconds."))
	c := m.Conditions()[0]
	wantMsg := `kernel log rule "t/0" (reason ContainerRuntimeTaskBlocked) matched at 2026-11-21T12:00:00Z; ` +
		`the line is on the secure port's /events and in hangwatch's log`
	if !c.Active || c.Reason != "ContainerRuntimeTaskBlocked" || c.Count != 2 || c.Message != wantMsg || !c.First.Equal(t0) {
		t.Fatalf("after matches = %+v; want active, the rule and its first match as a stable message", c)
	}
	if strings.Contains(c.Message, "containerd:1") {
		t.Fatalf("the condition's message carries the kernel line: %q", c.Message)
	}
	// The line that raised it is an event (for the secure /events and the
	// log); the repeat while active is only counted.
	if len(rec.conds) != 1 || len(rec.events) != 1 {
		t.Fatalf("callbacks: %d condition changes, %d events; want 1 and 1", len(rec.conds), len(rec.events))
	}
	if e := rec.events[0]; e.Condition != "KernelDeadlock" || e.Reason != "ContainerRuntimeTaskBlocked" || e.Count != 1 ||
		e.Message != "INFO: task containerd:1 blocked for more than 120 seconds." || !e.Time.Equal(t0) {
		t.Fatalf("raising event = %+v, want the first line for KernelDeadlock", e)
	}
	clk.Step(9 * time.Minute)
	m.Expire()
	if !m.Conditions()[0].Active {
		t.Fatal("cleared before 10 quiet minutes")
	}
	clk.Step(time.Minute)
	m.Expire()
	if m.Conditions()[0].Active || len(rec.conds) != 2 {
		t.Fatalf("not cleared after 10 quiet minutes: %+v", m.Conditions()[0])
	}
}

func TestRecoveryPatternClears(t *testing.T) {
	m, clk, _ := newTestMonitor(t, hungRules)
	m.Handle(line(clk, "INFO: task containerd:1 blocked for more than 120 seconds."))
	m.Handle(line(clk, "containerd recovered"))
	if m.Conditions()[0].Active {
		t.Fatal("recovery pattern did not clear the condition")
	}
}

func TestMinCountWithinWindow(t *testing.T) {
	m, clk, rec := newTestMonitor(t, hungRules)
	m.Handle(line(clk, "flaky thing"))
	clk.Step(61 * time.Second)
	m.Handle(line(clk, "flaky thing"))
	m.Handle(line(clk, "flaky thing")) // 3 matches, but over 61s
	if len(rec.events) != 0 {
		t.Fatalf("events = %+v, want none: 3 matches were not within 1m", rec.events)
	}
	m.Handle(line(clk, "flaky thing")) // the last 3 are within the window
	if len(rec.events) != 1 || rec.events[0].Reason != "Flaky" {
		t.Fatalf("events = %+v, want one Flaky", rec.events)
	}
}

func TestEventFloodIsRateLimitedAndCounted(t *testing.T) {
	m, clk, rec := newTestMonitor(t, hungRules)
	oom := "Memory cgroup out of memory: Killed process 7 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB"
	for i := 0; i < 100000; i++ {
		m.Handle(line(clk, oom))
	}
	if len(rec.events) != eventBurst {
		t.Fatalf("%d events from a flood, want the burst of %d", len(rec.events), eventBurst)
	}
	if rs := m.sets[0].rules[1]; rs.held != 100000-eventBurst || len(rs.recent) != 0 {
		t.Fatalf("held = %d, recent = %d: repeats must be counted, not stored", rs.held, len(rs.recent))
	}
	if m.Conditions()[0].Active {
		t.Fatal("an OOM kill must not raise a condition")
	}
	clk.Step(eventInterval)
	m.Expire()
	last := rec.events[len(rec.events)-1]
	if len(rec.events) != eventBurst+1 || last.Count != 100000-eventBurst || !strings.Contains(last.Message, "Killed process 7") {
		t.Fatalf("after the interval: %d events, last %+v; want one carrying the held-back count", len(rec.events), last)
	}
}

func TestConditionOwnedTwiceIsAnError(t *testing.T) {
	set := DefaultRuleSet()
	if _, err := NewMonitor([]*RuleSet{set, DefaultRuleSet()}, clocktesting.NewFakeClock(t0), Options{}); err == nil ||
		!strings.Contains(err.Error(), `condition "KernelDeadlock" is owned by another rules file`) {
		t.Fatalf("err = %v", err)
	}
}

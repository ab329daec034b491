package kernellog

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

const hungLine = "INFO: task containerd:1 blocked for more than 120 seconds."

// kmsgRecord parses a /dev/kmsg record of priority prio (facility<<3 |
// level) carrying msg, as the kernel hands it out.
func kmsgRecord(t *testing.T, prio int, msg string) Record {
	t.Helper()
	r, err := ParseRecord(fmt.Appendf(nil, "%d,1,1000000,-;%s", prio, msg))
	if err != nil {
		t.Fatal(err)
	}
	r.Time = t0
	return r
}

func newFacilityMonitor(t *testing.T, set *RuleSet) (*Monitor, *recorder, metrics.KubeRegistry) {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	rec := &recorder{}
	m, err := NewMonitor([]*RuleSet{set}, clocktesting.NewFakeClock(t0), Options{Metrics: NewMetrics(reg),
		OnEvent:     func(e Event) { rec.events = append(rec.events, e) },
		OnCondition: func(c ConditionState) { rec.conds = append(rec.conds, c) }})
	if err != nil {
		t.Fatal(err)
	}
	return m, rec, reg
}

// TestUserFacilityHungTaskRaisesNothing: `echo '<2>INFO: task
// containerd:1 blocked ...' > /dev/kmsg` by any root process comes out as
// priority 10 (facility user, level crit); the built-in rules match kern
// records alone, so it raises neither KernelDeadlock nor an event. The
// kernel's own line, at priority 2 or 3 (facility kern), does.
func TestUserFacilityHungTaskRaisesNothing(t *testing.T) {
	m, rec, reg := newFacilityMonitor(t, DefaultRuleSet())
	m.Handle(kmsgRecord(t, 10, hungLine))
	if c := m.Conditions()[0]; c.Active || len(rec.events) != 0 {
		t.Fatalf("a user-facility line raised %+v, events %+v", c, rec.events)
	}
	const skipped = `hangwatch_kernel_records_facility_skipped_total{facility="user",source="hangwatch-kernel"} 1`
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP hangwatch_kernel_records_facility_skipped_total [ALPHA] "+
		"Kernel log records a rules file did not match for their syslog facility (kern alone unless the file's facilities say otherwise), by the file's source and the facility.\n"+
		"# TYPE hangwatch_kernel_records_facility_skipped_total counter\n"+skipped+"\n"), "hangwatch_kernel_records_facility_skipped_total"); err != nil {
		t.Fatal(err)
	}
	for _, prio := range []int{2, 3} {
		m, rec, _ := newFacilityMonitor(t, DefaultRuleSet())
		r := kmsgRecord(t, prio, hungLine)
		if r.Facility != FacilityKern {
			t.Fatalf("priority %d parsed as facility %d", prio, r.Facility)
		}
		m.Handle(r)
		if c := m.Conditions()[0]; !c.Active || c.Reason != "ContainerRuntimeTaskBlocked" {
			t.Errorf("the kernel's own line at priority %d: %+v, want KernelDeadlock active", prio, c)
		}
		if len(rec.events) != 2 { // the raising one (KernelDeadlock) and TaskHung
			t.Errorf("priority %d: events %+v, want 2", prio, rec.events)
		}
	}
}

// TestRulesFileOptsInToOtherFacilities: "facilities" lets a rules file
// match what userspace writes too (a test, a demo, a daemon of one's own).
func TestRulesFileOptsInToOtherFacilities(t *testing.T) {
	set, err := ParseRuleSet([]byte(`{"source": "mine", "facilities": ["kern", "user"],
	  "conditions": [{"type": "KernelDeadlock", "reason": "KernelHasNoDeadlock", "message": "none"}],
	  "rules": [{"type": "permanent", "condition": "KernelDeadlock", "reason": "TaskBlocked", "pattern": "task containerd:\\d+ blocked.*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _, _ := newFacilityMonitor(t, set)
	m.Handle(kmsgRecord(t, 3<<3|2, hungLine)) // daemon: not opted in
	if m.Conditions()[0].Active {
		t.Fatal("a daemon-facility line matched a file that names kern and user")
	}
	m.Handle(kmsgRecord(t, 10, hungLine))
	if !m.Conditions()[0].Active {
		t.Fatal("a user-facility line did not match a file that opts in to user")
	}
	matchers, err := NewMatchers([]*RuleSet{DefaultRuleSet(), set})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	matchers.Match(kmsgRecord(t, 10, hungLine), func(s ScanMatch) { got = append(got, s.Reason) })
	if strings.Join(got, ",") != "TaskBlocked" { // `diag` and `rules test` filter the same way
		t.Fatalf("matches of a user line = %v, want the opted-in file's alone", got)
	}
}

func TestFacilitiesAreChecked(t *testing.T) {
	_, err := ParseRuleSet([]byte(`{"source": "s", "facilities": ["kern", "usr", "local8", "LOCAL0"], "rules": []}`))
	if err == nil {
		t.Fatal("unknown facility names were accepted")
	}
	for _, want := range []string{`facilities[1] "usr": not a syslog facility (kern, user, mail,`, `facilities[2] "local8"`, `facilities[3] "LOCAL0"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "facilities[0]") {
		t.Errorf("kern was refused: %v", err)
	}
	if _, err := ParseRuleSet([]byte(`{"source": "s", "facilities": [], "rules": []}`)); err == nil ||
		!strings.Contains(err.Error(), "facilities: empty") {
		t.Errorf("an empty facilities list: %v, want it refused", err)
	}
	all := `{"source": "s", "facilities": ["kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
	  "authpriv", "ftp", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"], "rules": []}`
	if _, err := ParseRuleSet([]byte(all)); err != nil {
		t.Errorf("syslog's facility names: %v", err)
	}
}

func TestFacilityName(t *testing.T) {
	for f, want := range map[int]string{0: "kern", 1: "user", 11: "ftp", 12: "other", 16: "local0", 23: "local7", 24: "other", -1: "other", 8191: "other"} {
		if got := FacilityName(f); got != want {
			t.Errorf("FacilityName(%d) = %q, want %q", f, got, want)
		}
	}
}

// TestReplayedLinesWithoutFacilityCountAsKern: `rules test` replays a
// saved log; a kmsg record keeps its facility, a dmesg line or a plain
// message has none and counts as the kernel's.
func TestReplayedLinesWithoutFacilityCountAsKern(t *testing.T) {
	matchers, err := NewMatchers([]*RuleSet{DefaultRuleSet()})
	if err != nil {
		t.Fatal(err)
	}
	in := "14,1,1000000,-;INFO: task containerd:1 blocked for more than 120 seconds.\n" + // user, info: from userspace
		"6,2,2000000,-;INFO: task containerd:2 blocked for more than 120 seconds.\n" + // kern
		"[    3.000000] INFO: task containerd:3 blocked for more than 120 seconds.\n" + // dmesg: no facility
		"INFO: task containerd:4 blocked for more than 120 seconds.\n" // plain
	var seqs []uint64
	if _, err := Replay(strings.NewReader(in), func(r Record) {
		matchers.Match(r, func(m ScanMatch) {
			if m.Reason == "ContainerRuntimeTaskBlocked" {
				seqs = append(seqs, m.Seq)
			}
		})
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs) != "[2 3 4]" {
		t.Fatalf("matched records %v, want 2 (kern), 3 and 4 (no facility), not 1 (user)", seqs)
	}
}

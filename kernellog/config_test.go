package kernellog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/watchdog"
)

func TestBadRulesAreNamed(t *testing.T) {
	_, err := ParseRuleSet([]byte(`{"source": "s", "bufferSize": 10, "conditions": [{"type": "KernelDeadlock"}],
	 "rules": [
	  {"type": "permanent", "condition": "KernelDeadlock", "reason": "Ok", "pattern": "fine"},
	  {"name": "broken", "type": "permanent", "condition": "KernelDeadlock", "reason": "Bad", "pattern": "task (unclosed"},
	  {"type": "permanent", "condition": "Nope", "reason": "NoCond", "pattern": "x"},
	  {"type": "sometimes", "reason": "BadType", "pattern": "x"},
	  {"type": "temporary", "reason": "NoWindow", "pattern": "x", "minCount": 3},
	  {"type": "temporary", "reason": "ClearOnEvent", "pattern": "x", "clearAfter": "1m"}]}`))
	if err == nil {
		t.Fatal("bad rules were accepted")
	}
	for _, want := range []string{
		`rules[1] (broken, reason "Bad"): pattern "task (unclosed" does not compile`,
		`rules[2] (s/2, reason "NoCond"): condition "Nope" is not in the file's conditions`,
		`rules[3] (s/3, reason "BadType"): type "sometimes"`,
		`rules[4] (s/4, reason "NoWindow"): minCount 3`,
		`rules[5] (s/5, reason "ClearOnEvent"): clearAfter and recoveryPattern apply to permanent rules only`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "rules[0]") {
		t.Errorf("the good rule was reported: %v", err)
	}
}

func TestUnknownFieldsAreErrors(t *testing.T) {
	_, err := ParseRuleSet([]byte(`{"source": "s", "rules": [{"type": "temporary", "reason": "R", "pattern": "x", "clearAftr": "1m"}]}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "clearAftr"`) {
		t.Fatalf("err = %v, want the misspelt field named", err)
	}
}

func TestDefaultRulesLoad(t *testing.T) {
	set := DefaultRuleSet()
	if len(set.Rules) < 12 || set.Conditions[0].Type != "KernelDeadlock" {
		t.Fatalf("default rules: %d rules, conditions %v", len(set.Rules), set.Conditions)
	}
}

// TestRuleFileNumbersAreBounded: numbers that would make the daemon
// allocate or wait without end are refused, naming the field (a bufferSize
// of 2^62 used to pass and then panic in makeslice).
func TestRuleFileNumbersAreBounded(t *testing.T) {
	long := strings.Repeat("a", MaxPatternBytes+1)
	_, err := ParseRuleSet([]byte(`{"source": "s", "bufferSize": 4611686018427387904, "conditions": [],
	 "rules": [
	  {"type": "temporary", "reason": "Many", "pattern": "x", "minCount": 100000000, "window": "1m"},
	  {"type": "temporary", "reason": "Long", "pattern": "` + long + `"},
	  {"type": "temporary", "reason": "Forever", "pattern": "x", "minCount": 2, "window": "10000h"}]}`))
	if err == nil {
		t.Fatal("out-of-range numbers were accepted")
	}
	for _, want := range []string{
		"bufferSize 4611686018427387904: must be from 1 to 1000",
		`rules[0] (s/0, reason "Many"): minCount 100000000: must be from 1 to 10000`,
		`rules[1] (s/1, reason "Long"): pattern: 4097 bytes, at most 4096`,
		`rules[2] (s/2, reason "Forever"): window 10000h0m0s: must be positive and at most 168h0m0s`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestRuleFileSizeIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, make([]byte, MaxRuleFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRuleSet(path); err == nil || !strings.Contains(err.Error(), "over 1048576 bytes") {
		t.Fatalf("err = %v, want the size limit named", err)
	}
}

// FuzzParseRuleSet: no rules file panics the parser or yields a rule set
// the matcher cannot be built from.
func FuzzParseRuleSet(f *testing.F) {
	for _, name := range []string{"rules/default.json", "testdata/npd-kernel-monitor.json"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"source": "s", "bufferSize": 4611686018427387904, "rules": []}`))
	f.Add([]byte(`{"source": "s", "facilities": ["kern", "user", "local7"], "rules": [{"type": "temporary", "reason": "R", "pattern": "x"}]}`))
	f.Add([]byte(`{"source": "s", "facilities": [], "rules": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog.Start(5*time.Second, func() string { return fmt.Sprintf("loading the rules file %q", data) })()
		rs, err := ParseRuleSet(data)
		if err != nil {
			return
		}
		ms, err := NewMatchers([]*RuleSet{rs})
		if err != nil {
			t.Fatalf("a valid rule set does not build matchers: %v", err)
		}
		if rs.Facilities == nil && (!ms[0].Accepts(FacilityKern) || ms[0].Accepts(1)) {
			t.Fatalf("a file without facilities must match kern records alone")
		}
	})
}

// TestRuleFileReasonsAreChecked: a reason the Node would refuse, or an
// Event would carry oddly, is refused when the file loads, not when a
// line first matches.
func TestRuleFileReasonsAreChecked(t *testing.T) {
	_, err := ParseRuleSet([]byte(`{"source": "s",
	 "conditions": [{"type": "KernelDeadlock", "reason": "no deadlock", "message": "m"}],
	 "rules": [
	  {"type": "temporary", "reason": "Task Hung!", "pattern": "x"},
	  {"type": "permanent", "condition": "KernelDeadlock", "reason": "ContainerRuntimeTaskBlocked", "pattern": "y"}]}`))
	if err == nil {
		t.Fatal("reasons that are not CamelCase were accepted")
	}
	for _, want := range []string{
		`conditions[0] (KernelDeadlock): reason "no deadlock": must be CamelCase`,
		`rules[0] (s/0, reason "Task Hung!"): reason "Task Hung!": must be CamelCase`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ContainerRuntimeTaskBlocked") {
		t.Errorf("a CamelCase reason was refused:\n%v", err)
	}
}

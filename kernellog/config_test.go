package kernellog

import (
	"strings"
	"testing"
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

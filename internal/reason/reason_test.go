package reason

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"RuntimeHung": true, "ContainerRuntimeTaskBlocked": true, "A": true, "Has_Under:and,comma": true,
		"": false, "Task Hung": false, "9Lives": false, "Trailing:": false, strings.Repeat("A", MaxBytes+1): false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

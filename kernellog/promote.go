package kernellog

import (
	"fmt"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/internal/reason"
)

// Promotion makes the event rules of one reason raise a condition: an
// operator who wants a Node condition for what the rules only tell as an
// event (an XFS error, repeated OOM kills) says so in the configuration.
type Promotion struct {
	Reason    string
	Condition string
	// QuietWindow clears the condition after this long without a match;
	// zero: it lasts until the node reboots.
	QuietWindow time.Duration
}

// ParsePromotion reads REASON[=CONDITION][/CLEARAFTER]; the condition is
// the reason when not named.
func ParsePromotion(s string) (Promotion, error) {
	rest, window, hasWindow := strings.Cut(s, "/")
	why, cond, _ := strings.Cut(rest, "=")
	p := Promotion{Reason: why, Condition: cond}
	if p.Condition == "" {
		p.Condition = why
	}
	if !reason.Valid(p.Reason) || !upper(p.Reason) {
		return Promotion{}, fmt.Errorf("reason %q: must be CamelCase, as the rule's reason", p.Reason)
	}
	if !reason.Valid(p.Condition) || !upper(p.Condition) || strings.ContainsAny(p.Condition, ",:_") {
		return Promotion{}, fmt.Errorf("condition %q: must be a CamelCase condition type", p.Condition)
	}
	if hasWindow {
		d, err := time.ParseDuration(window)
		if err != nil || d <= 0 || d > MaxRuleDuration {
			return Promotion{}, fmt.Errorf("clearAfter %q: must be a duration from 1s to %v", window, MaxRuleDuration)
		}
		p.QuietWindow = d
	}
	return p, nil
}

// Promote turns, in sets, the event rules of each promotion's reason into
// permanent rules of its condition, which the set of the first such rule
// owns. A reason no event rule gives, or a condition some set already
// owns, is an error.
func Promote(sets []*RuleSet, promotions []Promotion) error {
	owned := map[string]bool{}
	for _, set := range sets {
		for _, c := range set.Conditions {
			owned[c.Type] = true
		}
	}
	for _, p := range promotions {
		if owned[p.Condition] {
			return fmt.Errorf("promote %s: condition %s is already raised by the kernel rules", p.Reason, p.Condition)
		}
		if n := promoteIn(sets, p); n == 0 {
			return fmt.Errorf("promote %s: no event rule of the kernel rules gives reason %s", p.Reason, p.Reason)
		}
		owned[p.Condition] = true
	}
	return nil
}

// promoteIn rewrites p's event rules in sets and returns how many.
func promoteIn(sets []*RuleSet, p Promotion) int {
	n := 0
	for _, set := range sets {
		for i := range set.Rules {
			r := &set.Rules[i]
			if r.Type != TypeTemporary || r.Reason != p.Reason {
				continue
			}
			r.Type, r.Condition = TypePermanent, p.Condition
			if p.QuietWindow > 0 {
				r.QuietWindow = &Duration{p.QuietWindow}
			}
			if n == 0 { // the first set with such a rule owns the condition
				set.Conditions = append(set.Conditions, ConditionSpec{Type: p.Condition, Reason: "No" + p.Reason,
					Message: fmt.Sprintf("no kernel log line of reason %s (an event promoted to this condition)", p.Reason)})
			}
			n++
		}
	}
	return n
}

// upper: s begins with a capital letter, as a reason and a condition type do.
func upper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

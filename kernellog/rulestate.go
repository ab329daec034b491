package kernellog

import (
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// ruleState is what one rule has seen. Memory is bounded: repeats are
// counted, never stored.
type ruleState struct {
	source string
	rule   *Rule
	metric counterInc

	recent []time.Time // the last MinCount match times, for the window
	active bool
	since  time.Time // when it became active
	// template is the rule's pattern when it has a message template, and
	// detail that template filled from the line that raised the rule.
	template *regexp.Regexp
	detail   string
	fixed    string // a Finding's message, said whole
	first    time.Time
	last     time.Time
	count    int64

	tokens    float64
	refilled  time.Time
	held      int    // matches held back by the rate limit
	heldText  string // the last of them
	heldSince time.Time
}

type counterInc interface{ Inc() }

type nopCounter struct{}

func (nopCounter) Inc() {}

func newRuleState(set *RuleSet, i int, metrics *Metrics) *ruleState {
	rs := &ruleState{source: set.Source, rule: &set.Rules[i], tokens: eventBurst, metric: nopCounter{}}
	if metrics != nil {
		rs.metric = metrics.ruleCounter(rs.rule.Name, rs.rule.Reason)
	}
	if rs.rule.Message != "" {
		rs.template = regexp.MustCompile(rs.rule.Pattern) // validated with the rules file
	}
	return rs
}

// match records a match; it returns an event, when the rate limit allows
// one, for a temporary rule's match and for the match that raises a
// permanent rule (its line goes nowhere else: the condition's message is
// RuleMessage). A permanent rule's repeats while it is active are counted.
func (rs *ruleState) match(text string, at time.Time) (Event, bool) {
	rs.metric.Inc()
	if !rs.countReached(at) {
		return Event{}, false
	}
	rs.count++
	if rs.first.IsZero() {
		rs.first = at
	}
	rs.last = at
	if rs.rule.Type == TypePermanent {
		if rs.active {
			return Event{}, false
		}
		rs.active, rs.since = true, at
		rs.detail = rs.describe(text)
	}
	return rs.limit(text, at)
}

// countReached applies MinCount within Window.
func (rs *ruleState) countReached(at time.Time) bool {
	n := rs.rule.MinCount
	if n <= 1 {
		return true
	}
	rs.recent = append(rs.recent, at)
	if len(rs.recent) > n {
		rs.recent = rs.recent[len(rs.recent)-n:]
	}
	return len(rs.recent) == n && at.Sub(rs.recent[0]) <= rs.rule.Window.Duration
}

// limit is a token bucket per rule: eventBurst events, then one per
// eventInterval; matches in between are counted into the next event.
func (rs *ruleState) limit(text string, at time.Time) (Event, bool) {
	rs.refill(at)
	if rs.tokens < 1 {
		if rs.held == 0 {
			rs.heldSince = at
		}
		rs.held++
		rs.heldText = text
		return Event{}, false
	}
	rs.tokens--
	ev := rs.event(at, text, 1+rs.held)
	rs.held = 0
	return ev, true
}

func (rs *ruleState) refill(at time.Time) {
	if rs.refilled.IsZero() {
		rs.refilled = at
	}
	if gained := at.Sub(rs.refilled).Seconds() / eventInterval.Seconds(); gained > 0 {
		rs.tokens = min(eventBurst, rs.tokens+gained)
		rs.refilled = at
	}
}

// flush sends the held-back repeats once the rate limit allows.
func (rs *ruleState) flush(now time.Time) (Event, bool) {
	if rs.held == 0 {
		return Event{}, false
	}
	rs.refill(now)
	if rs.tokens < 1 {
		return Event{}, false
	}
	rs.tokens--
	ev := rs.event(now, rs.heldText, rs.held)
	rs.held = 0
	return ev, true
}

func (rs *ruleState) event(at time.Time, text string, count int) Event {
	return Event{Time: at, Source: rs.source, Rule: rs.rule.Name, Reason: rs.rule.Reason, Condition: rs.rule.Condition,
		Message: text, Count: count}
}

// expire clears a permanent rule after its quiet window; it reports
// whether it did.
func (rs *ruleState) expire(now time.Time) bool {
	if rs.active && rs.rule.QuietWindow != nil && now.Sub(rs.last) >= rs.rule.QuietWindow.Duration {
		rs.recover()
		return true
	}
	return false
}

func (rs *ruleState) recover() {
	rs.active, rs.recent = false, rs.recent[:0]
}

// describe fills the rule's message template from the line that raised
// it; "" without a template.
func (rs *ruleState) describe(line string) string {
	if rs.template == nil {
		return ""
	}
	m := rs.template.FindStringSubmatchIndex(line)
	if m == nil {
		return ""
	}
	values := []byte(line)
	bounded := make([]int, len(m))
	copy(bounded, m)
	for i := 2; i+1 < len(bounded); i += 2 {
		if bounded[i] >= 0 && bounded[i+1]-bounded[i] > MaxMessageValueBytes {
			end := bounded[i] + MaxMessageValueBytes
			for end > bounded[i] && !utf8.RuneStart(values[end]) {
				end--
			}
			bounded[i+1] = end
		}
	}
	return string(rs.template.Expand(nil, []byte(rs.rule.Message), values, bounded))
}

// message is the condition's message while the rule is active.
func (rs *ruleState) message() string {
	if rs.fixed != "" {
		return rs.fixed
	}
	if rs.detail == "" {
		return RuleMessage(rs.rule, rs.since)
	}
	return fmt.Sprintf("%s (kernel log rule %q, reason %s, matched at %s; the line is on the secure port's /events and in hangwatch's log)",
		rs.detail, rs.rule.Name, rs.rule.Reason, rs.since.UTC().Format(time.RFC3339))
}

// RuleMessage is an active condition's message: the rule that raised it,
// its reason and when, never the kernel line. The line names processes,
// PIDs and addresses (what dmesg_restrict hides), and the message reaches
// the Node's status, its Events and the plain port; the line is in the
// raising event (Event.Condition), served on the authenticated /events
// and logged. It stays the same while the rule is active.
func RuleMessage(r *Rule, since time.Time) string {
	return fmt.Sprintf("kernel log rule %q (reason %s) matched at %s; the line is on the secure port's /events and in hangwatch's log",
		r.Name, r.Reason, since.UTC().Format(time.RFC3339))
}

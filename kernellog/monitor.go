package kernellog

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Event is a temporary rule's match, rate-limited per rule: Count is the
// number of matches it stands for (itself plus repeats held back since the
// rule's last event).
//
// A permanent rule's match that raises its condition is an event too, with
// Condition set: the condition's message names the rule, never the line
// (it reaches the Node, its Events and anyone who may get nodes), so the
// line is kept here, for the authenticated /events and the log.
type Event struct {
	Time      time.Time `json:"time"`
	Source    string    `json:"source"`
	Rule      string    `json:"rule"`
	Reason    string    `json:"reason"`
	Condition string    `json:"condition,omitempty"` // set for a permanent rule's
	Message   string    `json:"message"`             // the kernel line
	Count     int       `json:"count"`
}

// ConditionState is a condition as the kernel rules see it.
type ConditionState struct {
	Type    string    `json:"type"`
	Active  bool      `json:"active"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	First   time.Time `json:"firstMatch,omitempty"`
	Last    time.Time `json:"lastMatch,omitempty"`
	Count   int64     `json:"matches"`
}

// Fields is the condition as the `kernel` input of the condition rules
// reads it, under its type: kernel.<Type>.active (a match within the
// rule's window, or not yet cleared), .reason, .message (which rule
// matched and when: never the line, see RuleMessage) and .matches (how
// many so far).
func (s ConditionState) Fields() observations.KernelCondition {
	return observations.KernelCondition{Active: s.Active, Reason: s.Reason, Message: s.Message, Matches: s.Count}
}

// Event rate limit per rule: a burst, then one event per interval; matches
// in between are counted into the next event.
const (
	eventBurst    = 5
	eventInterval = 30 * time.Second
)

// Options are a Monitor's outputs; every field may be nil.
type Options struct {
	OnEvent     func(Event)
	OnCondition func(ConditionState) // called when a condition's state changes
	Metrics     *Metrics
}

// Monitor turns records into condition states and events. It is safe for
// concurrent use.
type Monitor struct {
	clock clock.PassiveClock
	opts  Options
	mu    sync.Mutex
	sets  []*setState
	conds map[string]*condState
	order []string
	now   time.Time // the time of the record being handled
	dirty bool      // a permanent rule matched or cleared since the last publish
	// silenced are reasons turned off (SetSilenced): a rule active with
	// one raises nothing.
	silenced map[string]bool
}

type setState struct {
	set     *RuleSet
	matcher *Matcher
	rules   []*ruleState
	onHit   func(Hit) // made once: no allocation per line
	// skipped counts, by facility, the records the set's facilities
	// leave out; made on first use, the last for "other".
	skipped [len(facilityNames) + 1]counterInc
}

type condState struct {
	spec  ConditionSpec
	rules []*ruleState
	last  ConditionState
}

// NewMonitor compiles the rule sets. Condition types must not repeat across
// sets.
func NewMonitor(sets []*RuleSet, clk clock.PassiveClock, opts Options) (*Monitor, error) {
	m := &Monitor{clock: clk, opts: opts, conds: map[string]*condState{}}
	for _, set := range sets {
		if err := m.add(set); err != nil {
			return nil, fmt.Errorf("rules %s: %w", set.Source, err)
		}
	}
	for _, t := range m.order {
		c := m.conds[t]
		c.last = c.state(m.silenced)
	}
	return m, nil
}

func (m *Monitor) add(set *RuleSet) error {
	matcher, err := NewMatcher(set)
	if err != nil {
		return err
	}
	s := &setState{set: set, matcher: matcher}
	s.onHit = func(h Hit) { m.hit(s, h, m.now) }
	for _, spec := range set.Conditions {
		if _, dup := m.conds[spec.Type]; dup {
			return fmt.Errorf("condition %q is owned by another rules file", spec.Type)
		}
		m.conds[spec.Type] = &condState{spec: spec}
		m.order = append(m.order, spec.Type)
	}
	for i := range set.Rules {
		rs := newRuleState(set, i, m.opts.Metrics)
		s.rules = append(s.rules, rs)
		if rs.rule.Type == TypePermanent {
			c := m.conds[rs.rule.Condition]
			c.rules = append(c.rules, rs)
		}
	}
	m.sets = append(m.sets, s)
	return nil
}

// ConditionTypes lists the conditions the rules own, with their healthy state.
func (m *Monitor) ConditionTypes() []ConditionSpec {
	out := make([]ConditionSpec, 0, len(m.order))
	for _, t := range m.order {
		out = append(out, m.conds[t].spec)
	}
	return out
}

// Handle matches one record.
func (m *Monitor) Handle(r Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = r.Time
	for _, s := range m.sets {
		if !s.matcher.Accepts(r.Facility) {
			s.skip(r.Facility, m.opts.Metrics)
			continue
		}
		s.matcher.Feed(r.Message, s.onHit)
	}
	m.publish()
}

// skip counts a record of facility f that the set does not match.
func (s *setState) skip(f int, metrics *Metrics) {
	if metrics == nil {
		return
	}
	i := len(s.skipped) - 1
	if f >= 0 && f < len(facilityNames) {
		i = f
	}
	if s.skipped[i] == nil {
		s.skipped[i] = metrics.facilitySkipped.WithLabelValues(s.set.Source, FacilityName(f))
	}
	s.skipped[i].Inc()
}

func (m *Monitor) hit(s *setState, h Hit, at time.Time) {
	rs := s.rules[h.Index]
	if rs.rule.Type == TypePermanent {
		m.dirty = true
	}
	if h.Recovery {
		rs.recover()
		return
	}
	if ev, ok := rs.match(h.Text, at); ok && m.opts.OnEvent != nil {
		m.opts.OnEvent(ev)
	}
}

// Expire clears permanent rules whose quiet window has passed and sends the
// repeats held back by the rate limit once it allows.
func (m *Monitor) Expire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, s := range m.sets {
		for _, rs := range s.rules {
			m.dirty = rs.expire(now) || m.dirty
			if ev, ok := rs.flush(now); ok && m.opts.OnEvent != nil {
				m.opts.OnEvent(ev)
			}
		}
	}
	m.publish()
}

// publish reports conditions whose state changed.
func (m *Monitor) publish() {
	if !m.dirty {
		return
	}
	m.dirty = false
	for _, t := range m.order {
		c := m.conds[t]
		st := c.state(m.silenced)
		if st.Active == c.last.Active && st.Reason == c.last.Reason && st.Message == c.last.Message {
			c.last = st
			continue
		}
		c.last = st
		if m.opts.OnCondition != nil {
			m.opts.OnCondition(st)
		}
	}
}

// SetSilenced turns reasons off: a permanent rule with one of them no
// longer makes its condition active (its matches are still counted, and
// its events still go out); the conditions are published again at once.
func (m *Monitor) SetSilenced(reasons []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.silenced = map[string]bool{}
	for _, r := range reasons {
		m.silenced[r] = true
	}
	m.dirty = true
	m.publish()
}

// Conditions returns every condition's state, in rules-file order.
func (m *Monitor) Conditions() []ConditionState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ConditionState, 0, len(m.order))
	for _, t := range m.order {
		out = append(out, m.conds[t].state(m.silenced))
	}
	return out
}

// state derives the condition from its rules: active while any rule not
// silenced is, with the reason and message of the rule active the longest.
func (c *condState) state(silenced map[string]bool) ConditionState {
	st := ConditionState{Type: c.spec.Type, Reason: c.spec.Reason, Message: c.spec.Message}
	var active []*ruleState // allocated only while something is active
	for _, rs := range c.rules {
		if rs.active && !silenced[rs.rule.Reason] {
			active = append(active, rs)
		}
	}
	if len(active) == 0 {
		return st
	}
	sort.SliceStable(active, func(i, j int) bool { return active[i].since.Before(active[j].since) })
	st.Active, st.Reason, st.Message = true, active[0].rule.Reason, active[0].message()
	for _, rs := range active {
		if st.First.IsZero() || rs.first.Before(st.First) {
			st.First = rs.first
		}
		if rs.last.After(st.Last) {
			st.Last = rs.last
		}
		st.Count += rs.count
	}
	return st
}

// QuietWindow is how long a condition's permanent rules need without a
// match to clear it: the longest clearAfter among them. ok is false when
// one of them never clears by time (no clearAfter: only a recovery line,
// or nothing, clears it, as node-problem-detector does).
func (m *Monitor) QuietWindow(condType string) (window time.Duration, ok bool) {
	c, found := m.conds[condType]
	if !found {
		return 0, false
	}
	for _, rs := range c.rules {
		if rs.rule.QuietWindow == nil {
			return 0, false
		}
		window = max(window, rs.rule.QuietWindow.Duration)
	}
	return window, true
}

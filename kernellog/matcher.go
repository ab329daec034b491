package kernellog

import (
	"fmt"
	"regexp"
	"strings"
)

// Hit is one rule (or one rule's recovery pattern) matching.
type Hit struct {
	Index    int // index of the rule in its RuleSet
	Rule     *Rule
	Recovery bool
	// Text is the line that matched, or for a multi-line pattern the
	// matched text of the buffer.
	Text string
}

type entry struct {
	index    int
	recovery bool
	re       *regexp.Regexp // pattern + `\z`
	// open is an equivalent unanchored regexp without the pattern's trailing
	// `.*`, for lines without a newline (`X.*\z` matches such a line exactly
	// when X occurs in it); nil when the pattern has no such tail.
	open  *regexp.Regexp
	multi bool
	lits  []int32
}

// Matcher matches lines against one RuleSet with node-problem-detector's
// semantics: each line is pushed into a buffer of the last bufferSize lines,
// and a pattern matches when it matches the joined buffer up to its very end.
// A pattern that cannot match a newline is tested against the last line only,
// which is the same thing. It is not safe for concurrent use.
type Matcher struct {
	set        *RuleSet
	facilities facilityMask // of the records fed to it; see Accepts
	ac         *automaton
	entries    []entry
	seen       []int64 // per literal: the line number it was last seen on
	lineNo     int64
	buf        []string // ring of the last lines
	mark       func(int32)
	gate       string // in every line a rule can match (gateOf); "": none
}

// NewMatcher compiles a validated RuleSet.
func NewMatcher(set *RuleSet) (*Matcher, error) {
	facilities, err := facilitiesOf(set.Facilities)
	if err != nil {
		return nil, err
	}
	m := &Matcher{set: set, facilities: facilities, buf: make([]string, 0, set.BufferSize)}
	var literals []string
	add := func(index int, recovery bool, pattern string) error {
		re, err := regexp.Compile(`(?:` + pattern + `)\z`)
		if err != nil {
			return err
		}
		e := entry{index: index, recovery: recovery, re: re, multi: canMatchNewline(pattern)}
		if head, ok := withoutTrailingAny(pattern); ok && !e.multi {
			if e.open, err = regexp.Compile(head); err != nil {
				return err
			}
		}
		for _, lit := range requiredLiterals(pattern) {
			e.lits = append(e.lits, int32(len(literals)))
			literals = append(literals, lit)
		}
		m.entries = append(m.entries, e)
		return nil
	}
	for i, r := range set.Rules {
		if err := add(i, false, r.Pattern); err != nil {
			return nil, err
		}
		if r.RecoveryPattern != "" {
			if err := add(i, true, r.RecoveryPattern); err != nil {
				return nil, err
			}
		}
	}
	m.ac = newAutomaton(literals)
	m.gate = gateOf(set.patterns())
	m.seen = make([]int64, len(literals))
	m.mark = func(id int32) { m.seen[id] = m.lineNo }
	return m, nil
}

// patterns are every pattern the set's rules run, recovery ones too.
func (set *RuleSet) patterns() []string {
	var out []string
	for _, r := range set.Rules {
		out = append(out, r.Pattern)
		if r.RecoveryPattern != "" {
			out = append(out, r.RecoveryPattern)
		}
	}
	return out
}

// Accepts tells whether records of syslog facility f go to this rule
// set: kern unless its file's "facilities" says otherwise. A record it
// does not accept must not be fed: it is not one of the set's lines, and
// does not join its buffer.
func (m *Matcher) Accepts(f int) bool { return m.facilities.has(f) }

// Feed matches one new line and calls hit for every rule that matches.
func (m *Matcher) Feed(line string, hit func(Hit)) {
	m.lineNo++
	m.push(line)
	if m.gate != "" && !strings.Contains(line, m.gate) {
		return
	}
	m.ac.scan(line, m.mark)
	joined := ""
	for i := range m.entries {
		e := &m.entries[i]
		if !m.candidate(e) {
			continue
		}
		text := line
		if e.multi {
			if joined == "" {
				joined = strings.Join(m.ordered(), "\n")
			}
			text = joined
		}
		if !e.matches(text) {
			continue
		}
		if e.multi {
			text = e.re.FindString(text)
		}
		hit(Hit{Index: e.index, Rule: &m.set.Rules[e.index], Recovery: e.recovery, Text: text})
	}
}

// candidate is the prefilter: a rule runs its regexp only if one of its
// required literals is on this line (or, for a multi-line rule, in the buffer).
func (m *Matcher) candidate(e *entry) bool {
	if len(e.lits) == 0 {
		return true
	}
	oldest := m.lineNo
	if e.multi {
		oldest = m.lineNo - int64(m.set.BufferSize) + 1
	}
	for _, id := range e.lits {
		if m.seen[id] >= oldest && m.seen[id] > 0 {
			return true
		}
	}
	return false
}

func (m *Matcher) push(line string) {
	if len(m.buf) < cap(m.buf) {
		m.buf = append(m.buf, line)
		return
	}
	m.buf[int((m.lineNo-1)%int64(cap(m.buf)))] = line
}

// ordered returns the buffered lines, oldest first.
func (m *Matcher) ordered() []string {
	if len(m.buf) < cap(m.buf) {
		return m.buf
	}
	start := int(m.lineNo % int64(cap(m.buf)))
	return append(append([]string{}, m.buf[start:]...), m.buf[:start]...)
}

func (e *entry) matches(text string) bool {
	if e.open != nil && strings.IndexByte(text, '\n') < 0 {
		return e.open.MatchString(text)
	}
	return e.re.MatchString(text)
}

// Matchers matches lines against several rule sets, each with its own buffer.
type Matchers []*Matcher

// NewMatchers compiles validated rule sets.
func NewMatchers(sets []*RuleSet) (Matchers, error) {
	ms := make(Matchers, 0, len(sets))
	for _, set := range sets {
		m, err := NewMatcher(set)
		if err != nil {
			return nil, fmt.Errorf("rules %s: %w", set.Source, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Feed matches one line against every set.
func (ms Matchers) Feed(line string, hit func(Hit)) {
	for _, m := range ms {
		m.Feed(line, hit)
	}
}

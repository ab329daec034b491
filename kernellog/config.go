package kernellog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/internal/reason"
)

// Rule types, as in node-problem-detector.
const (
	TypeTemporary = "temporary" // an event
	TypePermanent = "permanent" // sets a condition
)

// Duration is a JSON duration string such as "10m".
type Duration struct{ time.Duration }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"10m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// ConditionSpec is a condition a rules file owns, with its healthy state.
type ConditionSpec struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Rule is one rule of node-problem-detector's system-log-monitor format,
// plus hangwatch's optional fields.
type Rule struct {
	Type      string `json:"type"`
	Condition string `json:"condition,omitempty"`
	Reason    string `json:"reason"`
	Pattern   string `json:"pattern"`
	// hangwatch's additions, all optional:
	Name string `json:"name,omitempty"` // metric label; default "<source>/<index>"
	// QuietWindow clears a permanent rule after this long without a match.
	// Its field in the file stays clearAfter, as documented, so rules files
	// load unchanged; it is a duration, unlike a condition rule's
	// clearAfter, a count of evaluations.
	QuietWindow *Duration `json:"clearAfter,omitempty"`
	// RecoveryPattern clears a permanent rule when a line matches it.
	RecoveryPattern string `json:"recoveryPattern,omitempty"`
	// MinCount matches within Window are needed before the rule fires.
	MinCount int       `json:"minCount,omitempty"`
	Window   *Duration `json:"window,omitempty"`
	// Message, for a permanent rule, says what the condition's message
	// says while the rule is active: ${name} stands for what the pattern's
	// group (?P<name>...) matched in the raising line (regexp.Expand, each
	// value cut to MaxMessageValueBytes), so a rule can name a device (an
	// Xid's number, a PCI address) and never the rest of the line. Empty:
	// RuleMessage's words alone.
	Message string `json:"message,omitempty"`
}

// RuleSet is one rules file: node-problem-detector's kernel-monitor.json
// format, accepted unchanged, plus hangwatch's optional facilities.
type RuleSet struct {
	Plugin           string          `json:"plugin,omitempty"`
	PluginConfig     json.RawMessage `json:"pluginConfig,omitempty"`
	LogPath          string          `json:"logPath,omitempty"`
	Lookback         string          `json:"lookback,omitempty"`
	BufferSize       int             `json:"bufferSize,omitempty"`
	Source           string          `json:"source"`
	MetricsReporting *bool           `json:"metricsReporting,omitempty"`
	Conditions       []ConditionSpec `json:"conditions"`
	Rules            []Rule          `json:"rules"`
	// Facilities are the syslog facilities (by name: "kern", "user", ...)
	// of the records the rules match; left out, "kern" alone, the only one
	// userspace cannot write (facility.go). A line read from a file with
	// no facility (a dmesg line, a plain message) counts as kern.
	Facilities []string `json:"facilities,omitempty"`
}

// DefaultBufferSize is node-problem-detector's default line buffer.
const DefaultBufferSize = 10

// Bounds on a rules file, so a bad file is refused rather than taking the
// daemon's memory or time: NPD's own files are a few KiB with a buffer of
// 10 lines and 14 rules.
const (
	MaxRuleFileBytes = 1 << 20
	MaxBufferSize    = 1000
	MaxRules         = 1000
	MaxPatternBytes  = 4096
	MaxMinCount      = 10000 // match times are kept per rule
	MaxRuleDuration  = 7 * 24 * time.Hour
	// MaxMessageBytes bounds a rule's message template, and
	// MaxMessageValueBytes each group's value put in it.
	MaxMessageBytes      = 256
	MaxMessageValueBytes = 64
)

// LoadRuleSet reads and validates a rules file.
func LoadRuleSet(path string) (*RuleSet, error) {
	data, err := readBounded(path, MaxRuleFileBytes)
	if err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	rs, err := ParseRuleSet(data)
	if err != nil {
		return nil, fmt.Errorf("rules file %s: %w", path, err)
	}
	return rs, nil
}

// ParseRuleSet decodes strictly (unknown fields are errors) and validates,
// reporting every problem at once.
func ParseRuleSet(data []byte) (*RuleSet, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rs RuleSet
	if err := dec.Decode(&rs); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if rs.BufferSize == 0 {
		rs.BufferSize = DefaultBufferSize
	}
	if rs.Source == "" {
		rs.Source = "kernel-monitor"
	}
	for i := range rs.Rules {
		if rs.Rules[i].Name == "" {
			rs.Rules[i].Name = fmt.Sprintf("%s/%d", rs.Source, i)
		}
	}
	return &rs, rs.validate()
}

func (rs *RuleSet) validate() error {
	var errs []error
	if rs.BufferSize < 1 || rs.BufferSize > MaxBufferSize {
		errs = append(errs, fmt.Errorf("bufferSize %d: must be from 1 to %d", rs.BufferSize, MaxBufferSize))
	}
	if _, err := facilitiesOf(rs.Facilities); err != nil {
		errs = append(errs, err)
	}
	if len(rs.Rules) > MaxRules {
		errs = append(errs, fmt.Errorf("rules: %d rules, at most %d", len(rs.Rules), MaxRules))
	}
	if rs.Lookback != "" {
		if _, err := time.ParseDuration(rs.Lookback); err != nil {
			errs = append(errs, fmt.Errorf("lookback %q: %w", rs.Lookback, err))
		}
	}
	conds := map[string]bool{}
	for i, c := range rs.Conditions {
		if c.Type == "" {
			errs = append(errs, fmt.Errorf("conditions[%d]: type is empty", i))
		}
		if e := checkReason(c.Reason); e != "" {
			errs = append(errs, fmt.Errorf("conditions[%d] (%s): %s", i, c.Type, e))
		}
		conds[c.Type] = true
	}
	for i, r := range rs.Rules {
		for _, e := range r.problems(conds) {
			errs = append(errs, fmt.Errorf("rules[%d] (%s, reason %q): %s", i, r.Name, r.Reason, e))
		}
	}
	return errors.Join(errs...)
}

// problems lists what is wrong with one rule.
func (r Rule) problems(conds map[string]bool) []string {
	var out []string
	switch r.Type {
	case TypeTemporary:
		if r.QuietWindow != nil || r.RecoveryPattern != "" {
			out = append(out, "clearAfter and recoveryPattern apply to permanent rules only")
		}
	case TypePermanent:
		if !conds[r.Condition] {
			out = append(out, fmt.Sprintf("condition %q is not in the file's conditions", r.Condition))
		}
	default:
		out = append(out, fmt.Sprintf("type %q: must be %q or %q", r.Type, TypeTemporary, TypePermanent))
	}
	if e := checkReason(r.Reason); e != "" {
		out = append(out, e)
	}
	if err := checkPattern("pattern", r.Pattern); err != "" {
		out = append(out, err)
	}
	if r.RecoveryPattern != "" {
		if err := checkPattern("recoveryPattern", r.RecoveryPattern); err != "" {
			out = append(out, err)
		}
	}
	if r.Message != "" {
		out = append(out, r.messageProblems()...)
	}
	if r.MinCount < 0 || r.MinCount > MaxMinCount || (r.MinCount > 1 && r.Window == nil) {
		out = append(out, fmt.Sprintf("minCount %d: must be from 1 to %d, and above 1 only with a window", r.MinCount, MaxMinCount))
	}
	for name, d := range map[string]*Duration{"clearAfter": r.QuietWindow, "window": r.Window} {
		if d != nil && (d.Duration <= 0 || d.Duration > MaxRuleDuration) {
			out = append(out, fmt.Sprintf("%s %v: must be positive and at most %v", name, d.Duration, MaxRuleDuration))
		}
	}
	return out
}

// messageProblems checks a rule's message template: a permanent rule's,
// bounded, naming only groups its pattern has.
func (r Rule) messageProblems() []string {
	var out []string
	if r.Type != TypePermanent {
		out = append(out, "message applies to permanent rules only (an event carries its line)")
	}
	if len(r.Message) > MaxMessageBytes {
		out = append(out, fmt.Sprintf("message: %d bytes, at most %d", len(r.Message), MaxMessageBytes))
	}
	re, err := regexp.Compile(r.Pattern)
	if err != nil {
		return out // said by checkPattern
	}
	for _, name := range templateNames(r.Message) {
		if re.SubexpIndex(name) < 0 {
			out = append(out, fmt.Sprintf("message: ${%s} names no group (?P<%s>...) of the pattern", name, name))
		}
	}
	return out
}

// templateNames are the names a regexp.Expand template refers to: $name
// and ${name} ($$ is a dollar).
func templateNames(t string) []string {
	var names []string
	for _, m := range templateRef.FindAllStringSubmatch(t, -1) {
		switch {
		case m[1] != "":
			names = append(names, m[1])
		case m[2] != "":
			names = append(names, m[2])
		}
	}
	return names
}

var templateRef = regexp.MustCompile(`\$(?:\$|\{(\w+)\}|(\w+))`)

// checkReason says what is wrong with a reason a rule writes, or "".
func checkReason(r string) string {
	switch {
	case r == "":
		return "reason is empty"
	case !reason.Valid(r):
		return fmt.Sprintf("reason %.80q: must be CamelCase (letters and digits, \"_\", \",\" or \":\" inside) of at most %d bytes", r, reason.MaxBytes)
	}
	return ""
}

func checkPattern(field, p string) string {
	if strings.TrimSpace(p) == "" {
		return field + " is empty"
	}
	if len(p) > MaxPatternBytes {
		return fmt.Sprintf("%s: %d bytes, at most %d", field, len(p), MaxPatternBytes)
	}
	if _, err := regexp.Compile(p); err != nil {
		return fmt.Sprintf("%s %q does not compile: %v", field, p, err)
	}
	return ""
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes", path, limit)
	}
	return data, nil
}

package conditions

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/internal/reason"
	"github.com/hangwatch/hangwatch/observations"
)

// Spec is the rule of one condition, as data: CEL expressions over the
// observations (see Inputs) decide when it is a problem and what it says.
type Spec struct {
	// Type is the NodeCondition type, CamelCase.
	Type string `json:"type"`
	// Disabled drops a built-in condition.
	Disabled bool `json:"disabled,omitempty"`
	// Unknown are tried first, in order; the first whose `when` is true
	// makes the evaluation say hangwatch cannot tell (its own reads fail,
	// say): the condition goes Unknown with that reason and message, and
	// leaves it only after 2 evaluations in a row that agree.
	Unknown []Problem `json:"unknown,omitempty"`
	// Problems are tried in order; the first whose `when` is true makes the
	// evaluation bad and gives the reason and message.
	Problems []Problem `json:"problems,omitempty"`
	// Healthy is the reason and message while no problem holds.
	Healthy Outcome `json:"healthy"`
	// RaiseAfter consecutive bad evaluations make the condition True (default 1).
	RaiseAfter int `json:"raiseAfter,omitempty"`
	// ClearAfter consecutive good evaluations make it False again (default 1).
	ClearAfter int `json:"clearAfter,omitempty"`
	// MinDuration is how long the bad evaluations must also have lasted.
	MinDuration metav1.Duration `json:"minDuration,omitempty"`
	// Silenced are reasons an operator turned off (the configuration's
	// silencedReasons): a problem, or an unknown, whose verdict has one of
	// them does not count, and the next is tried.
	Silenced []string `json:"-"`
}

// Problem is one way a condition can be bad.
type Problem struct {
	// When is a CEL expression giving a bool.
	When string `json:"when"`
	// MinDuration is how long When must have held, evaluation after
	// evaluation, before the problem counts (Prometheus's `for`); until
	// then the rule goes on to the next problem. 0: at once.
	MinDuration metav1.Duration `json:"minDuration,omitempty"`
	// MinDurationExpression is MinDuration as a CEL expression over
	// `params` giving a duration (params.plegSlowFor), worked out when the
	// rule is compiled: a knob of the configuration, not an observation.
	MinDurationExpression string `json:"minDurationExpression,omitempty"`
	Outcome               `json:",inline"`
}

// Outcome gives a reason and a message, each a literal or a CEL expression
// giving a string (like a ValidatingAdmissionPolicy's message and
// messageExpression). Messages must not tick (no durations that grow), or
// every evaluation would cost a status write.
type Outcome struct {
	Reason            string `json:"reason,omitempty"`
	ReasonExpression  string `json:"reasonExpression,omitempty"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
}

// ValidType says whether t can be a condition type hangwatch writes:
// CamelCase.
func ValidType(t string) bool { return len(t) <= 316 && typeRE.MatchString(t) }

// The inputs a rule may read, each a CEL variable holding one signal's
// latest observation, of a type of package observations.
const (
	InputCRI       = observations.NameCRI
	InputKernel    = observations.NameKernel
	InputLease     = observations.NameLease
	InputPLEG      = observations.NamePLEG
	InputPodStarts = observations.NamePodStarts
)

// Inputs are the observations a rule may read, each a CEL variable.
var Inputs = observations.Names

var typeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// KubeletConditionTypes are the Node conditions the kubelet writes; no
// rule may own one.
var KubeletConditionTypes = []string{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}

// Bounds on a rule, so a config cannot make the engine keep or compute
// without end.
const (
	MaxProblems        = 100
	MaxEvaluations     = 1000 // raiseAfter, clearAfter
	MaxMinDuration     = 24 * time.Hour
	MaxExpressionBytes = 4096
)

// validate checks what can be checked without compiling; path names the
// spec in messages, such as conditions[2].
func (s *Spec) validate(path string) []error {
	var errs []error
	bad := func(field string, value any, why string) {
		errs = append(errs, fmt.Errorf("%s.%s: %q %s", path, field, fmt.Sprint(value), why))
	}
	if !typeRE.MatchString(s.Type) {
		bad("type", s.Type, "must be CamelCase, starting with a capital letter")
	}
	if slices.Contains(KubeletConditionTypes, s.Type) {
		bad("type", s.Type, "is the kubelet's; hangwatch never writes it")
	}
	if s.Disabled {
		return errs
	}
	if len(s.Problems) == 0 {
		bad("problems", "", "must list at least one problem")
	}
	if len(s.Problems) > MaxProblems {
		bad("problems", len(s.Problems), fmt.Sprintf("problems: must list at most %d", MaxProblems))
	}
	if len(s.Unknown) > MaxProblems {
		bad("unknown", len(s.Unknown), fmt.Sprintf("must list at most %d", MaxProblems))
	}
	if s.RaiseAfter < 0 || s.RaiseAfter > MaxEvaluations {
		bad("raiseAfter", s.RaiseAfter, fmt.Sprintf("must be from 0 to %d", MaxEvaluations))
	}
	if s.ClearAfter < 0 || s.ClearAfter > MaxEvaluations {
		bad("clearAfter", s.ClearAfter, fmt.Sprintf("must be from 0 to %d", MaxEvaluations))
	}
	if s.MinDuration.Duration < 0 || s.MinDuration.Duration > MaxMinDuration {
		bad("minDuration", s.MinDuration.Duration, fmt.Sprintf("must be from 0 to %v", MaxMinDuration))
	}
	errs = append(errs, validateProblems(s.Unknown, path+".unknown")...)
	errs = append(errs, validateProblems(s.Problems, path+".problems")...)
	return append(errs, s.Healthy.validate(path+".healthy")...)
}

func validateProblems(ps []Problem, path string) []error {
	var errs []error
	for i, p := range ps {
		at := fmt.Sprintf("%s[%d]", path, i)
		if strings.TrimSpace(p.When) == "" {
			errs = append(errs, fmt.Errorf("%s.when: must not be empty", at))
		}
		if len(p.When) > MaxExpressionBytes {
			errs = append(errs, fmt.Errorf("%s.when: %d bytes, at most %d", at, len(p.When), MaxExpressionBytes))
		}
		if d := p.MinDuration.Duration; d < 0 || d > MaxMinDuration {
			errs = append(errs, fmt.Errorf("%s.minDuration: %q must be from 0 to %v", at, d.String(), MaxMinDuration))
		}
		if p.MinDuration.Duration != 0 && p.MinDurationExpression != "" {
			errs = append(errs, fmt.Errorf("%s: set minDuration or minDurationExpression, not both", at))
		}
		if len(p.MinDurationExpression) > MaxExpressionBytes {
			errs = append(errs, fmt.Errorf("%s.minDurationExpression: %d bytes, at most %d", at, len(p.MinDurationExpression), MaxExpressionBytes))
		}
		errs = append(errs, p.validate(at)...)
	}
	return errs
}

func (o *Outcome) validate(path string) []error {
	var errs []error
	switch {
	case o.Reason != "" && o.ReasonExpression != "":
		errs = append(errs, fmt.Errorf("%s: set reason or reasonExpression, not both", path))
	case o.Reason == "" && o.ReasonExpression == "":
		errs = append(errs, fmt.Errorf("%s.reason: must be set (or reasonExpression)", path))
	case o.Reason != "" && !reason.Form(o.Reason):
		errs = append(errs, fmt.Errorf("%s.reason: %q must be CamelCase (letters, digits, '_', ',' or ':')", path, o.Reason))
	}
	if o.Message != "" && o.MessageExpression != "" {
		errs = append(errs, fmt.Errorf("%s: set message or messageExpression, not both", path))
	}
	for field, e := range map[string]string{"reasonExpression": o.ReasonExpression, "messageExpression": o.MessageExpression} {
		if len(e) > MaxExpressionBytes {
			errs = append(errs, fmt.Errorf("%s.%s: %d bytes, at most %d", path, field, len(e), MaxExpressionBytes))
		}
	}
	if len(o.Reason) > MaxReasonBytes {
		errs = append(errs, fmt.Errorf("%s.reason: %d bytes, at most %d", path, len(o.Reason), MaxReasonBytes))
	}
	if len(o.Message) > MaxMessageBytes {
		errs = append(errs, fmt.Errorf("%s.message: %d bytes, at most %d", path, len(o.Message), MaxMessageBytes))
	}
	return errs
}

// thresholds returns the hysteresis with defaults applied.
func (s *Spec) thresholds() Thresholds {
	return Thresholds{RaiseAfter: max(1, s.RaiseAfter), ClearAfter: max(1, s.ClearAfter), MinDuration: s.MinDuration.Duration}
}

package conditions

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"

	"github.com/hangwatch/hangwatch/internal/reason"
	"github.com/hangwatch/hangwatch/observations"
)

// rule is a compiled Spec.
type rule struct {
	spec        Spec
	unknown     []problem // evaluated first: hangwatch cannot tell
	problems    []problem
	healthy     outcome
	inputs      []string // every input the rule reads; it waits for all of them
	readsParams bool     // some expression reads params: it changes with them
}

type problem struct {
	when        *expr
	minDuration time.Duration
	since       time.Time // when `when` began to hold, in a row; guarded by the engine's lock
	outcome
}

type outcome struct{ reason, message text }

// compileRule compiles every expression of a spec, reporting each mistake
// with its field path.
func compileRule(env *ruleEnv, s Spec, path string) (*rule, []error) {
	if errs := s.validate(path); len(errs) > 0 {
		return nil, errs
	}
	r := &rule{spec: s}
	var errs []error
	r.unknown, errs = r.compileProblems(env, s.Unknown, path+".unknown")
	var perrs []error
	r.problems, perrs = r.compileProblems(env, s.Problems, path+".problems")
	errs = append(errs, perrs...)
	var oerrs []error
	r.healthy, oerrs = compileOutcome(env, s.Healthy, path+".healthy")
	errs = append(errs, oerrs...)
	r.addInputs(r.healthy.reason.inputs(), r.healthy.message.inputs())
	r.readsParams = r.readsParams || r.healthy.readsParams()
	if len(errs) == 0 && len(r.inputs) == 0 {
		errs = append(errs, fmt.Errorf("%s.problems: read no input (one of %v), so it could never change", path, Inputs))
	}
	return r, errs
}

// compileProblems compiles a list of problems and notes their inputs.
func (r *rule) compileProblems(env *ruleEnv, ps []Problem, path string) ([]problem, []error) {
	var out []problem
	var errs []error
	for i, p := range ps {
		at := fmt.Sprintf("%s[%d]", path, i)
		when, err := compile(env, p.When, cel.BoolType)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.when: %w", at, err))
			continue
		}
		minDuration, err := env.minDuration(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.minDurationExpression: %w", at, err))
		}
		o, oerrs := compileOutcome(env, p.Outcome, at)
		errs = append(errs, oerrs...)
		out = append(out, problem{when: when, minDuration: minDuration, outcome: o})
		r.addInputs(when.inputs, o.reason.inputs(), o.message.inputs())
		r.readsParams = r.readsParams || when.readsParams || o.readsParams() || p.MinDurationExpression != ""
	}
	return out, errs
}

func compileOutcome(env *ruleEnv, o Outcome, path string) (outcome, []error) {
	var out outcome
	var errs []error
	var err error
	if out.reason, err = compileText(env, o.Reason, o.ReasonExpression, path+".reasonExpression"); err != nil {
		errs = append(errs, err)
	}
	if out.message, err = compileText(env, o.Message, o.MessageExpression, path+".messageExpression"); err != nil {
		errs = append(errs, err)
	}
	return out, errs
}

func (r *rule) addInputs(lists ...[]string) {
	for _, l := range lists {
		for _, in := range l {
			if !slices.Contains(r.inputs, in) {
				r.inputs = append(r.inputs, in)
			}
		}
	}
	slices.Sort(r.inputs)
}

// evaluate runs the rule over the latest observations at now; errNoInput
// when one of its inputs has not been observed.
func (r *rule) evaluate(obs map[string]any, now time.Time) (Evaluation, error) {
	for _, in := range r.inputs {
		if _, ok := obs[in]; !ok {
			return Evaluation{}, errNoInput
		}
	}
	for _, p := range r.unknown {
		unsure, err := p.when.evalBool(obs)
		if err != nil {
			return Evaluation{}, err
		}
		if unsure {
			v, err := p.verdict(false, obs)
			if err == nil && slices.Contains(r.spec.Silenced, v.Reason) {
				continue
			}
			v.Unknown = true
			return v, err
		}
	}
	for i := range r.problems {
		p := &r.problems[i]
		bad, err := p.when.evalBool(obs)
		if err != nil {
			return Evaluation{}, err
		}
		if !p.held(bad, now) {
			continue
		}
		v, err := p.verdict(true, obs)
		if err == nil && slices.Contains(r.spec.Silenced, v.Reason) {
			continue
		}
		return v, err
	}
	return r.healthy.verdict(false, obs)
}

// held tells whether the problem counts: its `when` holds now and has held
// for minDuration.
func (p *problem) held(bad bool, now time.Time) bool {
	if !bad {
		p.since = time.Time{}
		return false
	}
	if p.since.IsZero() {
		p.since = now
	}
	return now.Sub(p.since) >= p.minDuration
}

func (o outcome) verdict(bad bool, obs map[string]any) (Evaluation, error) {
	why, err := o.reason.eval(obs)
	if err != nil {
		return Evaluation{}, err
	}
	if !reason.Valid(why) {
		return Evaluation{}, fmt.Errorf("reason %q is not CamelCase of at most %d bytes", cut(why, 80), MaxReasonBytes)
	}
	msg, err := o.message.eval(obs)
	if err != nil {
		return Evaluation{}, err
	}
	return Evaluation{Bad: bad, Reason: why, Message: cut(msg, MaxMessageBytes)}, nil
}

// Bounds on what a rule may write to the Node: a status patch with a
// message of megabytes would be refused, and retried, forever.
const (
	MaxMessageBytes = 1024
	MaxReasonBytes  = reason.MaxBytes
)

// cut shortens s to at most n bytes, on a UTF-8 boundary, ending in "..."
// when it cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}

// CompileSpecs compiles specs with params and reports every mistake at
// once, each named by its path under conditions and its rule's type.
// kernelConditions, when not nil, are the condition types the kernel
// rules raise: a rule naming another under kernel is refused.
func CompileSpecs(specs []Spec, params observations.Params, kernelConditions []string) error {
	_, err := compileAll(specs, params, kernelConditions)
	return err
}

func compileAll(specs []Spec, params observations.Params, kernelConditions []string) ([]*rule, error) {
	celEnv, err := newCELEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	env := &ruleEnv{cel: celEnv, params: params, kernelConditions: kernelConditions}
	var rules []*rule
	var errs []error
	seen := map[string]bool{}
	for i, s := range specs {
		path := fmt.Sprintf("conditions[%d]", i)
		if seen[s.Type] {
			errs = append(errs, fmt.Errorf("%s.type: %q appears twice", path, s.Type))
			continue
		}
		seen[s.Type] = true
		if s.Disabled {
			errs = append(errs, s.validate(path)...)
			continue
		}
		r, rerrs := compileRule(env, s, path)
		for _, e := range rerrs {
			errs = append(errs, fmt.Errorf("rule %s: %w", s.Type, e))
		}
		if len(rerrs) == 0 {
			rules = append(rules, r)
		}
	}
	return rules, errors.Join(errs...)
}

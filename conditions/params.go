package conditions

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/hangwatch/hangwatch/observations"
)

// DefaultParams are the knobs' values without a configuration: a Lease
// late by 2 renewals, RelistSlow counting after 2m.
func DefaultParams() observations.Params {
	return observations.Params{PLEGSlowFor: 2 * time.Minute}
}

// ruleEnv is what rules are compiled against: the CEL environment, the
// params their minDurationExpressions read, and the kernel rules'
// condition types (nil: not known).
type ruleEnv struct {
	cel              *cel.Env
	params           observations.Params
	kernelConditions []string
}

// minDuration is a problem's minDuration, or its minDurationExpression
// worked out from the params.
func (env *ruleEnv) minDuration(p Problem) (time.Duration, error) {
	if p.MinDurationExpression == "" {
		return p.MinDuration.Duration, nil
	}
	e, err := compile(env, p.MinDurationExpression, cel.DurationType)
	if err != nil {
		return 0, err
	}
	if len(e.inputs) > 0 {
		return 0, fmt.Errorf("reads %v: it may read only params, as it is worked out once, when the rule is compiled", e.inputs)
	}
	out, err := e.eval(map[string]any{observations.NameParams: env.params})
	if err != nil {
		return 0, err
	}
	d, ok := out.(types.Duration)
	if !ok {
		return 0, errors.New("did not give a duration")
	}
	minDuration := d.Duration
	if minDuration < 0 || minDuration > MaxMinDuration {
		return 0, fmt.Errorf("%q must be from 0 to %v", minDuration.String(), MaxMinDuration)
	}
	return minDuration, nil
}

func (o outcome) readsParams() bool { return o.reason.readsParams() || o.message.readsParams() }

func (t text) readsParams() bool { return t.expr != nil && t.expr.readsParams }

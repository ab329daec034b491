package conditions

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// costLimit bounds one expression's evaluation, so a costly user rule
// cannot stall the daemon (the API server's CEL uses the same mechanism).
const costLimit = 1_000_000

// newCELEnv declares every input as a map from field name to value.
func newCELEnv() (*cel.Env, error) {
	opts := []cel.EnvOption{cel.CrossTypeNumericComparisons(true), ext.Strings(), cel.OptionalTypes()}
	for _, in := range Inputs {
		opts = append(opts, cel.Variable(in, cel.MapType(cel.StringType, cel.DynType)))
	}
	return cel.NewEnv(opts...)
}

// expr is one compiled expression and the inputs it reads.
type expr struct {
	source string
	prg    cel.Program
	inputs []string
}

// compile checks an expression and that it gives want (or dyn).
func compile(env *cel.Env, source string, want *cel.Type) (*expr, error) {
	ast, iss := env.Compile(source)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("gives %s, want %s", out, want)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, err
	}
	var inputs []string
	for _, r := range ast.NativeRep().ReferenceMap() {
		if slices.Contains(Inputs, r.Name) && !slices.Contains(inputs, r.Name) {
			inputs = append(inputs, r.Name)
		}
	}
	slices.Sort(inputs)
	return &expr{source: source, prg: prg, inputs: inputs}, nil
}

func (e *expr) eval(vars map[string]any) (ref.Val, error) {
	out, _, err := e.prg.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.source, err)
	}
	return out, nil
}

func (e *expr) evalBool(vars map[string]any) (bool, error) {
	out, err := e.eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%s: gave %s, want bool", e.source, out.Type())
	}
	return bool(b), nil
}

func (e *expr) evalString(vars map[string]any) (string, error) {
	out, err := e.eval(vars)
	if err != nil {
		return "", err
	}
	s, ok := out.(types.String)
	if !ok {
		return "", fmt.Errorf("%s: gave %s, want string", e.source, out.Type())
	}
	return string(s), nil
}

// text is a literal or an expression giving a string.
type text struct {
	literal string
	expr    *expr
}

func compileText(env *cel.Env, literal, expression, path string) (text, error) {
	if expression == "" {
		return text{literal: literal}, nil
	}
	e, err := compile(env, expression, cel.StringType)
	if err != nil {
		return text{}, fmt.Errorf("%s: %w", path, err)
	}
	return text{expr: e}, nil
}

func (t text) eval(vars map[string]any) (string, error) {
	if t.expr == nil {
		return t.literal, nil
	}
	return t.expr.evalString(vars)
}

func (t text) inputs() []string {
	if t.expr == nil {
		return nil
	}
	return t.expr.inputs
}

// errNoInput marks an evaluation that lacked one of its inputs.
var errNoInput = errors.New("input not observed yet")

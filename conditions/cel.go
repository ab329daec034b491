package conditions

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"

	"github.com/hangwatch/hangwatch/observations"
)

// costLimit bounds one expression's evaluation, so a costly user rule
// cannot stall the daemon (the API server's CEL uses the same mechanism).
const costLimit = 1_000_000

// newCELEnv declares every input with its Go type (package observations),
// so a rule that names a field no input has, or compares a field with a
// value of the wrong type, does not compile.
func newCELEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.CrossTypeNumericComparisons(true), ext.Strings(), cel.OptionalTypes(),
		ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[observations.CRI](),
			reflect.TypeFor[observations.KernelCondition](), reflect.TypeFor[observations.Lease](),
			reflect.TypeFor[observations.PLEG](), reflect.TypeFor[observations.PodStarts](), reflect.TypeFor[observations.Params]()),
		cel.Variable(InputCRI, celObject[observations.CRI]()),
		cel.Variable(InputKernel, cel.MapType(cel.StringType, celObject[observations.KernelCondition]())),
		cel.Variable(InputLease, celObject[observations.Lease]()),
		cel.Variable(InputPLEG, celObject[observations.PLEG]()),
		cel.Variable(InputPodStarts, celObject[observations.PodStarts]()),
		cel.Variable(observations.NameParams, celObject[observations.Params]()))
}

// celObject is the CEL type ext.NativeTypes declares for a Go struct.
func celObject[T any]() *cel.Type {
	t := reflect.TypeFor[T]()
	return cel.ObjectType(path.Base(t.PkgPath()) + "." + t.Name())
}

// activation is what an input is bound to when a rule is evaluated.
func activation(in observations.Input) any {
	if k, ok := in.(observations.Kernel); ok {
		return map[string]observations.KernelCondition(k)
	}
	return in
}

// expr is one compiled expression and the inputs it reads.
type expr struct {
	source      string
	prg         cel.Program
	inputs      []string
	readsParams bool
}

// compile checks an expression and that it gives want (or dyn).
func compile(env *ruleEnv, source string, want *cel.Type) (*expr, error) {
	ast, iss := env.cel.Compile(source)
	if iss.Err() != nil {
		return nil, withFieldHint(iss.Err())
	}
	if err := checkKernelConditions(ast.NativeRep(), env.kernelConditions); err != nil {
		return nil, err
	}
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("gives %s, want %s", out, want)
	}
	prg, err := env.cel.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, err
	}
	e := &expr{source: source, prg: prg}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if slices.Contains(Inputs, r.Name) && !slices.Contains(e.inputs, r.Name) {
			e.inputs = append(e.inputs, r.Name)
		}
		e.readsParams = e.readsParams || r.Name == observations.NameParams
	}
	slices.Sort(e.inputs)
	return e, nil
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

func compileText(env *ruleEnv, literal, expression, path string) (text, error) {
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

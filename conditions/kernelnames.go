package conditions

import (
	"fmt"
	"slices"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/hangwatch/hangwatch/observations"
)

// kernelConditionsRead lists the kernel condition types an expression
// names, as kernel.KernelDeadlock or kernel["KernelDeadlock"]; a key
// worked out at run time is not listed.
func kernelConditionsRead(ast *celast.AST) []string {
	var names []string
	celast.PreOrderVisit(ast.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if name, ok := kernelKey(e); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}))
	return names
}

// kernelKey is the key of a select or an index on the kernel input.
func kernelKey(e celast.Expr) (string, bool) {
	isKernel := func(x celast.Expr) bool {
		return x.Kind() == celast.IdentKind && x.AsIdent() == observations.NameKernel
	}
	switch e.Kind() {
	case celast.SelectKind:
		if s := e.AsSelect(); isKernel(s.Operand()) {
			return s.FieldName(), true
		}
	case celast.CallKind:
		c := e.AsCall()
		if (c.FunctionName() == operators.Index || c.FunctionName() == operators.OptIndex) && len(c.Args()) == 2 &&
			isKernel(c.Args()[0]) && c.Args()[1].Kind() == celast.LiteralKind {
			if key, ok := c.Args()[1].AsLiteral().(types.String); ok {
				return string(key), true
			}
		}
	}
	return "", false
}

// checkKernelConditions refuses an expression naming a kernel condition
// the kernel rules do not raise; known nil checks nothing (the kernel
// rules are not known where the rule is compiled).
func checkKernelConditions(ast *celast.AST, known []string) error {
	if known == nil {
		return nil
	}
	for _, name := range kernelConditionsRead(ast) {
		if !slices.Contains(known, name) {
			return fmt.Errorf("kernel.%s: the kernel rules raise no condition %s (they raise %v)", name, name, known)
		}
	}
	return nil
}

// Package checksites reads a validation's checks from its source, so its
// test can require a case for each and a new check without one fails.
// A check is a call of a function (a method or a closure, by name) with
// a field path and a problem among its arguments; the path is read as a
// pattern (and so is the problem): string literals, what a loop over a
// literal table gives, and fmt.Sprintf formats, with * for anything else.
package checksites

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Site is one check: the field path it names and its problem, each a
// pattern where * stands for any text.
type Site struct {
	Path, Problem string
	Line          int
}

func (s Site) String() string { return fmt.Sprintf("line %d: %s: %s", s.Line, s.Path, s.Problem) }

// Matches tells whether an error of path and problem can come from s.
func (s Site) Matches(path, problem string) bool {
	return glob(s.Path).MatchString(path) && glob(s.Problem).MatchString(problem)
}

func glob(pattern string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$")
}

// Calls returns the checks in file: each call of a function named fn, its
// argument pathArg the field path and problemArg the problem. A path
// that a loop over a literal table expands stands as one Site a row.
func Calls(file, fn string, pathArg, problemArg int) ([]Site, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		return nil, err
	}
	var sites []Site
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		b := newBindings(fd.Body)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || calleeName(call) != fn || len(call.Args) <= max(pathArg, problemArg) {
				return true
			}
			problem := "*"
			if ps := b.values(call.Args[problemArg]); len(ps) == 1 {
				problem = ps[0]
			}
			for _, path := range b.values(call.Args[pathArg]) {
				sites = append(sites, Site{Path: path, Problem: problem, Line: fset.Position(call.Pos()).Line})
			}
			return true
		})
	}
	return sites, nil
}

func calleeName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// Case is what a test's case for a check gives: a field path and a
// problem.
type Case struct{ Path, Problem string }

// RequireCases fails t for each check of fn in file (Calls) that no case
// matches, and for each case that matches no check; it returns the checks.
func RequireCases(t testing.TB, file, fn string, pathArg, problemArg int, cases []Case) []Site {
	t.Helper()
	sites, err := Calls(file, fn, pathArg, problemArg)
	if err != nil {
		t.Fatal(err)
	}
	covered := make([]bool, len(cases))
	for _, s := range sites {
		found := false
		for i, c := range cases {
			if s.Matches(c.Path, c.Problem) {
				found, covered[i] = true, true
			}
		}
		if !found {
			t.Errorf("%s %v: no case for this check", file, s)
		}
	}
	for i, ok := range covered {
		if !ok {
			t.Errorf("the case %s: %s: no such check in %s", cases[i].Path, cases[i].Problem, file)
		}
	}
	return sites
}

package checksites

import (
	"go/ast"
	"go/token"
	"regexp"
)

// bindings are what a function's names stand for, as far as the source
// says: a name defined once (:=) from an expression, the key of a range over
// a map literal, the value of a range over a slice literal.
type bindings struct {
	assigned map[string]ast.Expr
	keys     map[string][]ast.Expr          // range keys of a map literal
	rows     map[string][]*ast.CompositeLit // range values of a slice literal of structs
	elems    map[string][]ast.Expr          // range values of a slice literal of other things
	fields   map[*ast.CompositeLit][]string // a struct literal type's field names, in order
}

func newBindings(body *ast.BlockStmt) *bindings {
	b := &bindings{assigned: map[string]ast.Expr{}, keys: map[string][]ast.Expr{}, rows: map[string][]*ast.CompositeLit{},
		elems: map[string][]ast.Expr{}, fields: map[*ast.CompositeLit][]string{}}
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok != token.DEFINE || len(s.Lhs) != len(s.Rhs) {
				break
			}
			for i, lhs := range s.Lhs {
				if id, ok := lhs.(*ast.Ident); ok {
					if _, again := b.assigned[id.Name]; again {
						b.assigned[id.Name] = nil // which one is meant is not known here
					} else {
						b.assigned[id.Name] = s.Rhs[i]
					}
				}
			}
		case *ast.RangeStmt:
			b.addRange(s)
		}
		return true
	})
	return b
}

func (b *bindings) addRange(s *ast.RangeStmt) {
	table, ok := s.X.(*ast.CompositeLit)
	if !ok {
		return
	}
	key, _ := s.Key.(*ast.Ident)
	value, _ := s.Value.(*ast.Ident)
	var names []string
	if at, ok := table.Type.(*ast.ArrayType); ok {
		if st, ok := at.Elt.(*ast.StructType); ok {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	for _, e := range table.Elts {
		switch e := e.(type) {
		case *ast.KeyValueExpr:
			if key != nil {
				b.keys[key.Name] = append(b.keys[key.Name], e.Key)
			}
		case *ast.CompositeLit:
			if value != nil && names != nil {
				b.rows[value.Name] = append(b.rows[value.Name], e)
				b.fields[e] = names
			}
		default:
			if value != nil {
				b.elems[value.Name] = append(b.elems[value.Name], e)
			}
		}
	}
}

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)

// values are the strings e may stand for, * for what is not known.
func (b *bindings) values(e ast.Expr) []string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, ok := stringLit(e); ok {
			return []string{s}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			var out []string
			for _, x := range b.values(e.X) {
				for _, y := range b.values(e.Y) {
					out = append(out, x+y)
				}
			}
			return out
		}
	case *ast.Ident:
		return b.identValues(e.Name)
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok && len(b.rows[id.Name]) > 0 {
			return b.fieldValues(b.rows[id.Name], e.Sel.Name)
		}
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
			if format, ok := stringLit(e.Args[0]); ok {
				return []string{b.sprintf(format, e.Args[1:])}
			}
		}
	}
	return []string{"*"}
}

func (b *bindings) identValues(name string) []string {
	var from []ast.Expr
	switch {
	case len(b.keys[name]) > 0:
		from = b.keys[name]
	case len(b.elems[name]) > 0:
		from = b.elems[name]
	case b.assigned[name] != nil:
		from = []ast.Expr{b.assigned[name]}
	default:
		return []string{"*"}
	}
	var out []string
	for _, e := range from {
		out = append(out, b.values(e)...)
	}
	return out
}

// fieldValues are the values of field in each row of a table.
func (b *bindings) fieldValues(rows []*ast.CompositeLit, field string) []string {
	var out []string
	for _, row := range rows {
		v := []string{"*"}
		for i, e := range row.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == field {
					v = b.values(kv.Value)
				}
			} else if names := b.fields[row]; i < len(names) && names[i] == field {
				v = b.values(e)
			}
		}
		out = append(out, v...)
	}
	return out
}

// sprintf fills each verb of format with what its argument stands for,
// when that is one string, else *.
func (b *bindings) sprintf(format string, args []ast.Expr) string {
	i := 0
	return verb.ReplaceAllStringFunc(format, func(string) string {
		v := []string{"*"}
		if i < len(args) {
			v = b.values(args[i])
		}
		i++
		if len(v) != 1 {
			return "*"
		}
		return v[0]
	})
}

package observations

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Field is one field a rule may read, as the README documents it.
type Field struct {
	Input string // cri, kernel, lease, pleg, params
	Path  string // as a rule writes it after the input: hungCalls, <ConditionType>.active
	Type  string // CEL type: bool, int, double, string, list(string)
	Doc   string
	// Optional fields are unset when unknown: test them with has().
	Optional bool
}

// Fields lists every field of every input, in declaration order.
func Fields() []Field {
	var out []Field
	out = append(out, structFields(NameCRI, "", reflect.TypeFor[CRI]())...)
	out = append(out, structFields(NameKernel, "<ConditionType>.", reflect.TypeFor[KernelCondition]())...)
	out = append(out, structFields(NameLease, "", reflect.TypeFor[Lease]())...)
	out = append(out, structFields(NamePLEG, "", reflect.TypeFor[PLEG]())...)
	out = append(out, structFields(NamePodStarts, "", reflect.TypeFor[PodStarts]())...)
	out = append(out, structFields(NameParams, "", reflect.TypeFor[Params]())...)
	return out
}

func structFields(input, prefix string, t reflect.Type) []Field {
	out := make([]Field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		optional := ft.Kind() == reflect.Pointer
		if optional {
			ft = ft.Elem()
		}
		out = append(out, Field{Input: input, Path: prefix + f.Tag.Get("cel"), Type: celType(ft),
			Doc: f.Tag.Get("doc"), Optional: optional})
	}
	return out
}

// celType names the CEL type a Go field's type is read as.
func celType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Float64:
		return "double"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list(" + celType(t.Elem()) + ")"
	}
	panic(fmt.Sprintf("observations: no CEL type for %s", t)) // caught by the package's tests
}

// MarkdownTable is the README's table of inputs, made from the types.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| input | field | type | meaning |\n| --- | --- | --- | --- |\n")
	last := ""
	for _, f := range Fields() {
		input := "| |" // the input is named on its first row only
		if f.Input != last {
			input, last = "| `"+f.Input+"` |", f.Input
		}
		doc := f.Doc
		if f.Optional {
			doc += "; unset when unknown: test with `has(" + f.Input + "." + f.Path + ")`"
		}
		fmt.Fprintf(&b, "%s `%s` | %s | %s |\n", input, f.Path, f.Type, doc)
	}
	return b.String()
}

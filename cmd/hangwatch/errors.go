package main

import (
	"errors"
	"fmt"
	"strings"
)

// invalidField is a flag or field with a value that is wrong.
type invalidField struct {
	field   string
	value   any
	problem string
}

func (e *invalidField) Error() string {
	return fmt.Sprintf("%s %v: %s", e.field, e.value, e.problem)
}

// fieldError names the flag or field and the value that is wrong.
func fieldError(field string, value any, problem string) error {
	return &invalidField{field: field, value: value, problem: problem}
}

// problems gathers every invalid value, so a config is reported whole.
type problems []error

func (p *problems) check(bad bool, field string, value any, problem string) {
	if bad {
		*p = append(*p, fieldError(field, value, problem))
	}
}

func (p *problems) add(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

func (p problems) err() error { return errors.Join(p...) }

// renameFileFields names a flag's config-file path in its error when the
// file set it: fromFile maps a flag name (without dashes) to that path.
func renameFileFields(err error, fromFile map[string]string) error {
	if err == nil || len(fromFile) == 0 {
		return err
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, renameFileFields(e, fromFile))
		}
		return errors.Join(out...)
	}
	var f *invalidField
	if errors.As(err, &f) {
		if path, ok := fromFile[strings.TrimPrefix(f.field, "--")]; ok {
			return fieldError(path+" ("+f.field+")", f.value, f.problem)
		}
	}
	return err
}

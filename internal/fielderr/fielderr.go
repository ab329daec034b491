// Package fielderr is the one shape of a setting that is wrong, for the
// configuration, hangwatch-remedy's policy and the commands' flags alike:
// the setting's path (a field path in a file, or a flag), its value, and
// what is wrong with it, printed as "path value: problem". A List gathers
// every problem so that a file is reported whole.
package fielderr

import "fmt"

// Error is a setting with a value that is wrong, named by its path.
type Error struct {
	Path    string
	Value   any
	Problem string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %v: %s", e.Path, e.Value, e.Problem)
}

// New is the Error of path with value.
func New(path string, value any, problem string) error {
	return &Error{Path: path, Value: value, Problem: problem}
}

// List gathers problems.
type List []error

// Check adds path's Error when bad.
func (l *List) Check(bad bool, path string, value any, problem string) {
	if bad {
		*l = append(*l, New(path, value, problem))
	}
}

// Add adds err when it is not nil (a check another package made).
func (l *List) Add(err error) {
	if err != nil {
		*l = append(*l, err)
	}
}

package fielderr

import (
	"errors"
	"testing"
)

func TestAListNamesEachSettingItsValueAndTheProblem(t *testing.T) {
	var l List
	l.Check(false, "fine", 1, "never")
	l.Check(true, "runtime.timeout", "0s", "must be positive")
	l.Add(nil)
	l.Add(errors.New("another package's check"))
	if len(l) != 2 || l[0].Error() != "runtime.timeout 0s: must be positive" || l[1].Error() != "another package's check" {
		t.Fatalf("%q", l)
	}
	var fe *Error
	if !errors.As(l[0], &fe) || fe.Path != "runtime.timeout" {
		t.Fatalf("not an *Error: %#v", l[0])
	}
}

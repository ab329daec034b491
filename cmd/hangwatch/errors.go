package main

import "fmt"

// fieldError names the flag or field and the value that is wrong.
func fieldError(field string, value any, problem string) error {
	return fmt.Errorf("%s %v: %s", field, value, problem)
}

package main

import "fmt"

// fieldError names the flag and the value that is wrong.
func fieldError(flag string, value any, problem string) error {
	return fmt.Errorf("%s %v: %s", flag, value, problem)
}

package main

import "github.com/hangwatch/hangwatch/internal/fielderr"

// fieldError names the flag and the value that is wrong, as the
// configuration's checks do.
func fieldError(flag string, value any, problem string) error {
	return fielderr.New(flag, value, problem)
}

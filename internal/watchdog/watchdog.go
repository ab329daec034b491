// Package watchdog bounds one step of a fuzz target in time: the fuzzing
// engine records a panicking input as a crasher, so an input that makes a
// step take too long is kept and named, like one that panics.
package watchdog

import (
	"fmt"
	"time"
)

// Start panics, naming the step with what(), if stop has not been called
// within d.
func Start(d time.Duration, what func() string) (stop func()) {
	done := make(chan struct{})
	go func() {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			panic(fmt.Sprintf("over %v: %s", d, what()))
		}
	}()
	return func() { close(done) }
}

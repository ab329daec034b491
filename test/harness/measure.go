package harness

import (
	"sync"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/measurements"
)

// Freezable is a runtime the tests stop with SIGSTOP: containerd or CRI-O.
type Freezable interface {
	Freeze() error
	Thaw() error
}

// Freeze stops the runtime until the test ends (or thaw is called).
func Freeze(t *testing.T, c Freezable) (thaw func()) {
	t.Helper()
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			if err := c.Thaw(); err != nil {
				t.Errorf("thaw: %v", err)
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// Measure records a duration in seconds (package measurements: a MEASURE
// line in the log, a JSON line in $HANGWATCH_MEASUREMENTS).
func Measure(t *testing.T, name string, d time.Duration) {
	t.Helper()
	measurements.Duration(t, name, d)
}

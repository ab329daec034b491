package integration

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestWriteBudget counts, at the API server, what hangwatch writes: in a
// steady state one status patch per heartbeat however often it probes (its
// messages do not tick), and one patch and one Event per transition
// (scenarios.WriteBudget). test/bench runs it for 5 minutes.
func TestWriteBudget(t *testing.T) {
	harness.Parallel(t)
	scenarios.WriteBudget(t, 25*time.Second, 10*time.Second)
}

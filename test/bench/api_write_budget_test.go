package bench

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestWriteBudget is test/integration's TestWriteBudget over 5 minutes of
// steady state at a 30 s heartbeat (scenarios.WriteBudget).
func TestWriteBudget(t *testing.T) {
	scenarios.WriteBudget(t, 5*time.Minute, 30*time.Second)
}

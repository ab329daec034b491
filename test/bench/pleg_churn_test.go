package bench

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestHealthyNodeWithPodChurnStaysPLEGHealthy is test/integration's test
// of the same name over 10 minutes of pod churn
// (scenarios.PodChurnStaysPLEGHealthy).
func TestHealthyNodeWithPodChurnStaysPLEGHealthy(t *testing.T) {
	scenarios.PodChurnStaysPLEGHealthy(t, 10*time.Minute)
}

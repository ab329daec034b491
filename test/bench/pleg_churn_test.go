package bench

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestHealthyNodeWithPodChurnStaysPLEGHealthy is test/integration's test
// of the same name over 10 minutes of pod churn
// (harness.PodChurnStaysPLEGHealthy).
func TestHealthyNodeWithPodChurnStaysPLEGHealthy(t *testing.T) {
	harness.PodChurnStaysPLEGHealthy(t, 10*time.Minute)
}

package bench

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestHangAfterSlownessMeasured records, three times each, how long a
// held ListPodSandbox and a held ContainerStatus (one container's) take to
// raise RuntimeHung after a minute of the same call answering in 1.5 s,
// and from a healthy start, for BENCHMARKS.md.
func TestHangAfterSlownessMeasured(t *testing.T) {
	perObject := []string{"--sample-size", "10"} // every container each cycle: the held one is read
	trials := []scenarios.HangTrial{
		{Name: "list_after_slowness", Method: "ListPodSandbox", SlowFor: time.Minute, Reason: "ListPodSandboxHung"},
		{Name: "list_from_healthy", Method: "ListPodSandbox", Reason: "ListPodSandboxHung"},
		{Name: "container_status_after_slowness", Method: "ContainerStatus", Object: true, SlowFor: time.Minute,
			Reason: "ContainerStatusHung", DaemonAt: perObject},
		{Name: "container_status_from_healthy", Method: "ContainerStatus", Object: true, Reason: "ContainerStatusHung", DaemonAt: perObject},
	}
	for _, tr := range trials {
		for range 3 {
			scenarios.RunHangTrial(t, tr)
		}
	}
	for range 3 {
		scenarios.RunHangTrial(t, scenarios.HangTrial{Name: "list_slowness_ended", Method: "ListPodSandbox", SlowFor: time.Minute, Ends: true})
	}
}

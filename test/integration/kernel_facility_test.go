package integration

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestUserFacilityKmsgLineRaisesNothing: any root process may write to
// /dev/kmsg (`echo '<2>INFO: task containerd:1 blocked for more than 120
// seconds.' > /dev/kmsg` from a container); the kernel tags it facility
// user, and the built-in rules, as shipped, match the kernel's own records
// alone: no KernelDeadlock (hangwatch-remedy would taint the node at once),
// no event.
func TestUserFacilityKmsgLineRaisesNothing(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := hangwatch.SharedContainerd(t)
	pid := 1000000 + rand.Intn(8000000)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s")
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.Condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))
	hangwatch.WriteUserLineSkipped(t, d, "hangwatch-kernel", fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid))
	d.StillFalse(t, "KernelDeadlock", 2*time.Second)
	if body, _ := d.Get("/events"); strings.Contains(body, "ContainerRuntimeTaskBlocked") || strings.Contains(body, "TaskHung") {
		t.Errorf("a user-facility line made a kernel event:\n%s", body)
	}
	text, _ := d.Get("/metrics")
	if v := harness.MetricValue(text, `hangwatch_kernel_rule_matches_total{reason="ContainerRuntimeTaskBlocked",rule="runtime-task-blocked"}`); v > 0 {
		t.Errorf("runtime-task-blocked matched %v times, want none", v)
	}
}

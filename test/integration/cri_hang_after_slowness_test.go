package integration

import (
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestAListHangAfterSlownessIsSeenAsFastAsFromHealthy runs hangwatch with
// its defaults through the fault proxy to a real containerd. 40 s of
// ListPodSandbox answering in 1.5 s (slow, not hung) back the full cycles
// off; then ListPodSandbox is held while Version answers. The heartbeat's
// list beat, which never backs off, must see it within two heartbeat
// periods and a timeout (7 s), as from a healthy start; the bound here is
// 15 s on shared machines. hack/bench.sh measures it and the per-object
// case three times each (TestHangAfterSlownessMeasured).
func TestAListHangAfterSlownessIsSeenAsFastAsFromHealthy(t *testing.T) {
	harness.Parallel(t)
	seen := scenarios.RunHangTrial(t, scenarios.HangTrial{Name: "list_after_slowness", Method: "ListPodSandbox", SlowFor: 40 * time.Second,
		Reason: "ListPodSandboxHung"})
	if seen.FromHold > 15*time.Second {
		t.Errorf("a ListPodSandbox hold after slowness was seen %v after it began; goal 7s (bound 15s on shared machines)", seen.FromHold)
	}
}

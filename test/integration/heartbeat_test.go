package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/scenarios"
)

// TestHeartbeatSeesAHangAfterSlowness runs hangwatch with its defaults
// (--period 30s, --heartbeat-period 2.5s, --timeout 2s) through the fault
// proxy to a real containerd. A minute of ListPodSandbox answering in
// 1.2s (slow, not hung) backs the full cycles off to --max-period; RuntimeHung
// must not hold through it. Then containerd freezes. The heartbeat, which
// never backs off, must still raise RuntimeHung within a period and a
// timeout. After a thaw under CPU load, RuntimeHung must clear within two
// heartbeat periods.
func TestHeartbeatSeesAHangAfterSlowness(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c := hangwatch.OwnContainerd(t)
	dir, err := os.MkdirTemp("", "hwhb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	proxy, err := criproxy.Start(filepath.Join(dir, "cri.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	d := hangwatch.StartDaemon(t, proxy.Endpoint, "--kernel=false", "--pleg-emulation-period", "0")
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { st, _, _ := d.Condition(t, "RuntimeHung"); return st == "False" }, harness.UnlessExited(d))

	// 1.2s: slow (over the 1s threshold) whatever the load, and 0.8s short
	// of the timeout for the proxy and the machine's scheduling.
	slow := proxy.Inject(criproxy.Fault{Method: "ListPodSandbox", Delay: 1200 * time.Millisecond})
	defer slow()
	scenarios.SlowIsNotHung(t, time.Minute, "slow ListPodSandbox", func() (string, string) { st, reason, _ := d.Condition(t, "RuntimeHung"); return st, reason }, d)

	thaw := harness.Freeze(t, c)
	frozen := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True after the freeze", func() bool { st, _, _ := d.Condition(t, "RuntimeHung"); return st == "True" }, harness.UnlessExited(d))
	raised := time.Since(frozen)
	_, reason, msg := d.Condition(t, "RuntimeHung")
	harness.Measure(t, "runtime_hung_after_freeze_following_slowness", raised)
	t.Logf("RuntimeHung %s: %s", reason, msg)
	if raised > 10*time.Second {
		t.Errorf("a freeze after a minute of slow calls took %v to raise RuntimeHung; goal 5s (bound 10s on shared machines)", raised)
	}

	slow()
	stop := harness.BurnCPU(t, 2)
	defer stop()
	thaw()
	thawed := time.Now()
	harness.Eventually(t, time.Minute, "RuntimeHung False after the thaw", func() bool { st, _, _ := d.Condition(t, "RuntimeHung"); return st == "False" }, harness.UnlessExited(d))
	harness.Measure(t, "runtime_hung_cleared_after_thaw_under_cpu_load", time.Since(thawed))
	if cleared := time.Since(thawed); cleared > 15*time.Second {
		t.Errorf("cleared %v after the thaw under load; goal two heartbeat periods (5s), bound 15s", cleared)
	}
}

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/crio"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestRepairRefusesAKillModeThatLosesTheContainers: CRI-O run by a real
// systemd with the unit CRI-O ships, so KillMode=control-group, under
// its cgroupfs manager, so each conmon stays in crio.service's cgroup: a
// restart would kill them all, and every container with them (measured:
// 2 running before, 0 after). diag says so, and with repair on, a hang
// of the whole runtime is refused as impossible (issue 48), naming the
// KillMode and the conmons; CRI-O keeps its main process and every
// container runs on.
func TestRepairRefusesAKillModeThatLosesTheContainers(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, sd, err := crio.StartUnderSystemd(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	s := repair.Settings{Enabled: true, SystemdSocket: sd.Socket(), KubeletUnit: "kubelet.service", MaxRestartsPerHour: 3}
	rt := repair.Diagnose(ctx, s, c.Endpoint, "", nil).Targets[0]
	if rt.Possible || rt.KillMode != "control-group" || !strings.Contains(rt.Why, "KillMode=control-group") {
		t.Errorf("diagnosis of CRI-O with KillMode=control-group and its conmons in its cgroup: %+v; want not possible, saying why", rt)
	}
	dir := hangwatch.SocketDir(t)
	proxy, err := criproxy.Start(filepath.Join(dir, "cri.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	config := filepath.Join(dir, "hangwatch.yaml")
	body := "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nrepair:\n  enabled: true\n  systemdSocket: " + sd.Socket() +
		"\n  runtimeUnit: " + crio.Unit + "\n  runtimeSocket: " + c.Socket + "\nconditions:\n- type: KubeletUnresponsive\n  disabled: true\n"
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	d := hangwatch.StartRepairing(t, proxy.Endpoint, "--config", config)
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	before, pid0 := runningIDs(t, c.Runtime()), c.PID()

	release := proxy.Inject(criproxy.Fault{Method: "ListPodSandbox"})
	defer release()
	harness.Eventually(t, 2*time.Minute, "repair to find the restart impossible",
		func() bool { return runtimeRepairs(d, repair.OutcomeImpossible) >= 1 }, harness.UnlessExited(d))
	log, err := os.ReadFile(d.Log.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "has KillMode=control-group") || !strings.Contains(string(log), "other processes in its cgroup") {
		t.Errorf("the repair process's log does not say why (KillMode=control-group, the other processes)")
	}
	if n := runtimeRepairs(d, repair.OutcomeRestarted); n != 0 || c.PID() != pid0 {
		t.Errorf("restarted %v times, main PID %d -> %d; want no restart", n, pid0, c.PID())
	}
	release()
	harness.Eventually(t, time.Minute, "RuntimeHung False", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	after := runningIDs(t, c.Runtime())
	for id := range before {
		if !after[id] {
			t.Errorf("container %s is not running (running: %v)", id, after)
		}
	}
}

package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/crio"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestRepairRestartsCRIOUnderSystemd: CRI-O run by a real systemd with
// the unit CRI-O ships (Restart=on-failure, RestartSec=10, WatchdogSec=60s)
// plus KillMode=process, and hangwatch with repair on. diag's repair
// report finds crio.service from the CRI socket's listener. A hang through
// the fault proxy (ListPodSandbox held, CRI-O itself healthy, so its own
// watchdog stays quiet) is repaired by a SIGKILL through systemd's D-Bus
// API after the shipped restartRuntimeAfter; systemd starts CRI-O again,
// and its containers run on, each with its conmon.
//
// KillMode=process is what docs/remediation.md asks for on a node whose CRI-O
// uses the cgroupfs manager, as here (systemd is not PID 1 on the test
// machine, so CRI-O's default systemd manager, which gives each conmon a
// scope of its own, cannot run). With the shipped unit's control-group,
// the same run measured 2 containers running before the repair and 0
// after, their 2 conmons killed with the unit's cgroup.
func TestRepairRestartsCRIOUnderSystemd(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, sd, err := crio.StartUnderSystemd(ctx, "process")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.CreatePods(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	checkCRIORepairDiagnosis(t, ctx, c)
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
	before, pid0, conmons := runningIDs(t, c.Runtime()), c.PID(), len(harness.ProcessesNaming("conmon", c.Dir))

	release := proxy.Inject(criproxy.Fault{Method: "ListPodSandbox"})
	defer release()
	held := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True", func() bool { return d.RuntimeHung(t) == "True" }, harness.UnlessExited(d))
	restarted := func() bool { return runtimeRepairs(d, repair.OutcomeRestarted) >= 1 }
	harness.Eventually(t, 3*time.Minute, "hangwatch to restart crio.service (once 3 waits old)", restarted, harness.UnlessExited(d))
	harness.Measure(t, "crio_repair_restart_after_hang", time.Since(held))
	var pid int
	harness.Eventually(t, time.Minute, "systemd to start CRI-O again", func() bool { pid = c.PID(); return pid != 0 && pid != pid0 })
	harness.Measure(t, "crio_repair_new_main_pid_after_hang", time.Since(held))
	release()
	harness.Eventually(t, time.Minute, "RuntimeHung False after the restart", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	after := runningIDs(t, c.Runtime())
	for id := range before {
		if !after[id] {
			t.Errorf("container %s is not running after the repair (running: %v)", id, after)
		}
	}
	if left := len(harness.ProcessesNaming("conmon", c.Dir)); left != conmons {
		t.Errorf("%d conmons before the repair, %d after; want every one kept (KillMode=process)", conmons, left)
	}
	t.Logf("CRI-O restarted by repair (PID %d -> %d) %v after the hang; %d containers running before, %d after; %d conmons",
		pid0, pid, time.Since(held).Round(time.Second), len(before), len(after), conmons)
}

// checkCRIORepairDiagnosis: `hangwatch diag --repair`'s report, in
// process, finds crio.service from the CRI socket, with its Restart=.
func checkCRIORepairDiagnosis(t *testing.T, ctx context.Context, c *crio.CRIO) {
	t.Helper()
	s := repair.Settings{Enabled: true, SystemdSocket: c.Systemd().Socket(), KubeletUnit: "kubelet.service", MaxRestartsPerHour: 3}
	rt := repair.Diagnose(ctx, s, c.Endpoint, "", nil).Targets[0]
	if !rt.Possible || rt.Unit != crio.Unit || rt.Restart != "on-failure" || rt.MainPID != c.PID() {
		t.Errorf("diagnosis of CRI-O: %+v; want %s found from the CRI socket, Restart=on-failure, its main PID %d", rt, crio.Unit, c.PID())
	}
}

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/stuckdir"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// repairRig is containerd supervised by a real systemd (upstream's unit:
// Type=notify, KillMode=process, Restart=always, RestartSec=5), a unit
// whose main process listens on a socket of its own while one of its
// threads is held in uninterruptible sleep for real, the fault proxy in
// front of containerd, and hangwatch with repair on, writing to a Node of
// the shared API server.
type repairRig struct {
	stuck  *stuckdir.Dir
	c      *containerd.Containerd
	sd     *systemd.Systemd
	proxy  *criproxy.Proxy
	d      *hangwatch.Daemon
	cp     *harness.ControlPlane
	node   string
	config string
	// stuckSocket is the stuck unit's listener's socket.
	stuckSocket string
	dir         string
}

// stuckUnit is a service whose main process listens on stuckSocket, its
// leader in S, while another of its threads waits in D for a directory
// lock held by a mkdir that a FUSE server never answers.
const stuckUnit = "stuck.service"

func startRepairRig(t *testing.T) *repairRig {
	t.Helper()
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stuck := holdFirstMkdir(t, ctx) // before systemd: its mount namespace copies the FUSE mount
	r := &repairRig{stuck: stuck, cp: hangwatch.SharedControlPlane(t), node: hangwatch.UniqueNode("hw-repair")}
	r.c, r.sd = containerd.StartUnderSystemdT(t, 1, 2)
	r.dir = hangwatch.SocketDir(t)
	r.stuckSocket = filepath.Join(r.dir, "stuck.sock")
	r.startUnit(t, ctx, stuckUnit, fmt.Sprintf("%s -listen %s -stuck-dir %s", hangwatch.UnitmainBin, r.stuckSocket, stuck.MkdirTarget()))
	pid, err := r.sd.MainPID(ctx, stuckUnit)
	if err == nil {
		err = waitThreadInD(ctx, pid)
	}
	if err != nil {
		t.Fatalf("a thread of %s's main process in D: %v", stuckUnit, err)
	}
	if r.proxy, err = criproxy.Start(filepath.Join(r.dir, "cri.sock"), r.c.Socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.proxy.Stop)
	r.config = filepath.Join(r.dir, "hangwatch.yaml")
	r.writeConfig(t, "runtimeUnit: "+stuckUnit, "runtimeSocket: "+r.stuckSocket)
	kc := hangwatch.CreateNode(t, r.cp, r.node)
	r.d = hangwatch.StartRepairing(t, r.proxy.Endpoint, hangwatch.NodeArgs(kc, r.node, "--config", r.config)...)
	return r
}

// startUnit sets a service with the command as ExecStart and starts it.
func (r *repairRig) startUnit(t *testing.T, ctx context.Context, name, command string) {
	t.Helper()
	if err := r.sd.SetUnit(ctx, name, fmt.Sprintf("[Service]\nExecStart=%s\nRestart=always\n", command)); err != nil {
		t.Fatal(err)
	}
	if err := r.sd.StartUnit(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// waitThreadInD waits until a thread of pid is in uninterruptible sleep.
func waitThreadInD(ctx context.Context, pid int) error {
	var err error
	_, pollErr := harness.Poll(ctx, time.Minute, fmt.Sprintf("a thread of PID %d in D", pid), func() bool {
		var inD bool
		_, inD, err = repair.HostProc.ThreadInD(pid)
		return err != nil || inD
	}, harness.Every(10*time.Millisecond))
	if err != nil {
		return err
	}
	return pollErr
}

// holdFirstMkdir mounts the never-answering FUSE directory and starts the
// mkdir that holds its lock, released when the test ends.
func holdFirstMkdir(t *testing.T, ctx context.Context) *stuckdir.Dir {
	t.Helper()
	stuck, err := stuckdir.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := stuck.MkdirCommand()
	first := exec.Command(cmd[0], cmd[1:]...)
	if err := first.Start(); err != nil {
		stuck.Release()
		t.Fatal(err)
	}
	// after systemd has stopped (cleanups run last first): Release answers
	// the held mkdir with EIO, and it exits
	t.Cleanup(func() { stuck.Release(); _ = first.Wait() })
	if err := stuck.WaitRequest(ctx); err != nil {
		t.Fatal(err)
	}
	return stuck
}

// writeConfig writes hangwatch's config with repair on, shipped timings,
// and the extra repair lines; the Node has no kubelet, so no
// KubeletUnresponsive.
func (r *repairRig) writeConfig(t *testing.T, repairLines ...string) {
	t.Helper()
	body := "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nrepair:\n  enabled: true\n" +
		"  systemdSocket: " + r.sd.Socket() + "\n"
	for _, l := range repairLines {
		body += "  " + l + "\n"
	}
	body += "conditions:\n- type: KubeletUnresponsive\n  disabled: true\n"
	if err := os.WriteFile(r.config+".new", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.config+".new", r.config); err != nil { // whole, as a ConfigMap's swap
		t.Fatal(err)
	}
}

// reload writes the config and waits until hangwatch applied it.
func (r *repairRig) reload(t *testing.T, repairLines ...string) {
	t.Helper()
	before := r.logCount(t, "Repair settings reloaded")
	r.writeConfig(t, repairLines...)
	harness.Eventually(t, 30*time.Second, "hangwatch to reload the repair settings", func() bool {
		return r.logCount(t, "Repair settings reloaded") > before
	})
}

func (r *repairRig) logCount(t *testing.T, s string) int {
	t.Helper()
	data, err := os.ReadFile(r.d.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), s)
}

// repairs reads hangwatch_repairs_total for the runtime and outcome.
func (r *repairRig) repairs(outcome string) float64 { return runtimeRepairs(r.d, outcome) }

// runtimeRepairs reads d's hangwatch_repairs_total for the runtime and
// outcome; -1 when /metrics does not answer.
func runtimeRepairs(d *hangwatch.Daemon, outcome string) float64 {
	text, err := d.Get("/metrics")
	if err != nil {
		return -1
	}
	return harness.MetricValue(text, fmt.Sprintf(`hangwatch_repairs_total{outcome="%s",target="runtime"}`, outcome))
}

func (r *repairRig) waitRepairs(t *testing.T, limit time.Duration, outcome string, want float64) {
	t.Helper()
	harness.Eventually(t, limit, fmt.Sprintf("hangwatch_repairs_total{outcome=%q} to reach %v", outcome, want),
		func() bool { return r.repairs(outcome) >= want },
		harness.Explaining(func() string { return fmt.Sprintf("it is %v", r.repairs(outcome)) }))
}

func (r *repairRig) mainPID(t *testing.T) int { return containerdMainPID(t, r.sd) }

// containerdMainPID is the main PID of containerd's unit under sd.
func containerdMainPID(t *testing.T, sd *systemd.Systemd) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, err := sd.MainPID(ctx, containerd.Unit)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func (r *repairRig) waitEvent(t *testing.T, eventType, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	harness.Eventually(t, 30*time.Second, "a "+eventType+" "+reason+" Event on the Node", func() bool {
		for _, e := range harness.NodeEvents(t, r.cp, r.node) {
			if e.Type == eventType && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	t.Logf("Event %s: %s", reason, found.Message)
	return found
}

func (r *repairRig) runtimeHung(t *testing.T) (string, string) {
	st, reason, _ := r.d.Condition(t, "RuntimeHung")
	return st, reason
}

// runningContainers maps each running container's ID to its pod sandbox.
func (r *repairRig) runningContainers(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.c.Runtime().ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range resp.Containers {
		out[c.Id] = c.PodSandboxId
	}
	return out
}

// TestRepairRestartsAHungContainerdUnderSystemd runs the repair rung
// against a real systemd, with the shipped timings (restartRuntimeAfter
// 20s, 3 restarts an hour), in the order a node would live it:
//  1. pointed at a unit whose main process has a thread in D for real (its
//     leader in S), a freeze is not repaired: RepairImpossible, nothing
//     killed;
//  2. pointed at a wrapper unit (a shell whose child listens, as k3s starts
//     containerd): RepairRefused, nothing killed;
//  3. reloaded to containerd's unit in dry run: RepairDryRun, nothing
//     killed; then, with DrainInProgress True on the Node, the next is
//     RepairStoodAside;
//  4. thawed, reloaded to act, frozen again: containerd is killed through
//     systemd's D-Bus API and started again by systemd, RuntimeHung clears,
//     and every container runs on with its ID (the shims outlive it);
//  5. a hang a restart does not cure (the proxy holds Version): one more
//     restart once the new containerd is 3 waits old, then the budget is
//     spent and no more are made.
func TestRepairRestartsAHungContainerdUnderSystemd(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	r := startRepairRig(t)
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { st, _ := r.runtimeHung(t); return st == "False" })
	r.checkDiagnosis(t)

	pid0 := r.mainPID(t)
	thaw := harness.Freeze(t, r.c)
	r.waitRepairs(t, time.Minute, repair.OutcomeImpossible, 1)
	if e := r.waitEvent(t, corev1.EventTypeWarning, "RepairImpossible"); !strings.Contains(e.Message, "thread") {
		t.Errorf("RepairImpossible says %q; want the thread in D named", e.Message)
	}
	r.refusesAWrapper(t)
	r.releaseStuck(t)
	r.reload(t, "runtimeUnit: "+containerd.Unit, "runtimeSocket: "+r.c.Socket, "dryRun: true")
	r.waitRepairs(t, time.Minute, repair.OutcomeDryRun, 1)
	r.waitEvent(t, corev1.EventTypeNormal, "RepairDryRun")
	r.standsAsideForMaintenance(t)
	if pid := r.mainPID(t); pid != pid0 || r.repairs(repair.OutcomeRestarted) != 0 {
		t.Fatalf("containerd's main PID %d -> %d, restarted %v, before repair was let act", pid0, pid, r.repairs(repair.OutcomeRestarted))
	}
	thaw()
	harness.Eventually(t, time.Minute, "RuntimeHung False after the thaw", func() bool { st, _ := r.runtimeHung(t); return st == "False" })

	r.reload(t, "runtimeUnit: "+containerd.Unit, "runtimeSocket: "+r.c.Socket)
	r.restartCures(t, pid0)
	r.budgetStops(t)
}

// refusesAWrapper points repair at a unit whose main process is a shell
// and whose listener is the shell's child: refused, with an Event that
// says why and names repair.runtimeUnit, and the shell is not killed.
func (r *repairRig) refusesAWrapper(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sock := filepath.Join(r.dir, "wrapped.sock")
	r.startUnit(t, ctx, "wrapper.service", fmt.Sprintf("/bin/sh -c '%s -listen %s; exit 0'", hangwatch.UnitmainBin, sock))
	shell, err := r.sd.MainPID(ctx, "wrapper.service")
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "the wrapped listener's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	r.reload(t, "runtimeUnit: wrapper.service", "runtimeSocket: "+sock)
	r.waitRepairs(t, time.Minute, repair.OutcomeRefused, 1)
	e := r.waitEvent(t, corev1.EventTypeWarning, "RepairRefused")
	if !strings.Contains(e.Message, "is not the process listening on "+sock) || !strings.Contains(e.Message, "repair.runtimeUnit") {
		t.Errorf("RepairRefused says %q; want the listener check, naming repair.runtimeUnit", e.Message)
	}
	if pid, err := r.sd.MainPID(ctx, "wrapper.service"); err != nil || pid != shell {
		t.Errorf("the wrapper's main PID %d -> %d (%v): killed", shell, pid, err)
	}
}

// standsAsideForMaintenance: while the Node's DrainInProgress is True, as
// an administrator's tool writes it on the real API server, the frozen
// runtime is not restarted (the agent reads the Node for the repair
// process), and the Event says so.
func (r *repairRig) standsAsideForMaintenance(t *testing.T) {
	t.Helper()
	hangwatch.SetNodeCondition(t, r.cp, r.node, "DrainInProgress", corev1.ConditionTrue)
	r.waitRepairs(t, time.Minute, repair.OutcomeStoodAside, 1)
	if e := r.waitEvent(t, corev1.EventTypeWarning, "RepairStoodAside"); !strings.Contains(e.Message, "DrainInProgress") {
		t.Errorf("RepairStoodAside says %q; want DrainInProgress named", e.Message)
	}
	hangwatch.SetNodeCondition(t, r.cp, r.node, "DrainInProgress", corev1.ConditionFalse)
}

// releaseStuck ends the uninterruptible sleep (well before the kernel's
// 120 s hung-task report) and stops its unit; the mount goes at cleanup,
// once systemd's namespace, which holds a copy, is gone.
func (r *repairRig) releaseStuck(t *testing.T) {
	t.Helper()
	r.stuck.Answer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.sd.StopUnit(ctx, stuckUnit); err != nil {
		t.Logf("stop %s: %v", stuckUnit, err)
	}
}

// checkDiagnosis: what `hangwatch diag --repair` reports, run in process
// against the real systemd, with the unit found from the CRI socket.
func (r *repairRig) checkDiagnosis(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := repair.Settings{Enabled: true, SystemdSocket: r.sd.Socket(), KubeletUnit: "kubelet.service", MaxRestartsPerHour: 3}
	rep := repair.Diagnose(ctx, s, r.c.Endpoint, "", nil)
	rt := rep.Targets[0]
	if !rt.Possible || rt.Unit != containerd.Unit || rt.Restart != "always" || rt.MainPID != r.mainPID(t) {
		t.Errorf("diagnosis of the runtime: %+v; want %s found from the CRI socket, Restart=always, its main PID", rt, containerd.Unit)
	}
	if kl := rep.Targets[1]; kl.Possible || !strings.Contains(kl.Why, "kubelet.service") {
		t.Errorf("diagnosis of a kubelet with no unit: %+v; want not possible, naming kubelet.service", kl)
	}
	s.RuntimeUnit, s.RuntimeSocket = stuckUnit, r.stuckSocket
	if rt := repair.Diagnose(ctx, s, r.c.Endpoint, "", nil).Targets[0]; rt.Possible || !strings.Contains(rt.Why, "uninterruptible sleep (D)") {
		t.Errorf("diagnosis of a unit whose main process has a thread in D: %+v; want not possible, saying why", rt)
	}
}

// restartCures freezes containerd and measures, from the freeze, the
// RuntimeHung, the restart and the clear; every container keeps running.
func (r *repairRig) restartCures(t *testing.T, pid0 int) {
	t.Helper()
	before := r.runningContainers(t)
	if len(before) != 2 {
		t.Fatalf("%d containers running before the freeze, want 2", len(before))
	}
	harness.Freeze(t, r.c)
	frozen := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True", func() bool { st, _ := r.runtimeHung(t); return st == "True" })
	harness.Measure(t, "repair_runtimehung_true_after_freeze", time.Since(frozen))
	var pid int
	harness.Eventually(t, 2*time.Minute, "systemd to start a new containerd", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// A main process systemd has just forked may not be found below it
		// yet (no process with that PID): not yet, not a failure.
		pid, _ = r.sd.MainPID(ctx, containerd.Unit)
		return pid != 0 && pid != pid0
	})
	harness.Measure(t, "repair_restarted_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "RuntimeHung False after the restart", func() bool { st, _ := r.runtimeHung(t); return st == "False" })
	harness.Measure(t, "repair_runtimehung_false_after_freeze", time.Since(frozen))
	if got := r.repairs(repair.OutcomeRestarted); got != 1 {
		t.Errorf("restarted = %v, want 1", got)
	}
	e := r.waitEvent(t, corev1.EventTypeNormal, "RuntimeRestarted")
	if !strings.Contains(e.Message, containerd.Unit) || !strings.Contains(e.Message, "Restart=always") {
		t.Errorf("RuntimeRestarted says %q; want the unit and its Restart=", e.Message)
	}
	after := r.runningContainers(t)
	for id, sandbox := range before {
		if after[id] != sandbox {
			t.Errorf("container %s (sandbox %s) is not running after the restart: %v", id, sandbox, after)
		}
	}
}

// budgetStops holds Version in the proxy: a hang no restart cures. With a
// dry run and a restart already in the hour, one more restart is made,
// then the budget is spent, once, and no restart follows.
func (r *repairRig) budgetStops(t *testing.T) {
	t.Helper()
	release := r.proxy.Inject(criproxy.Fault{Method: "Version"})
	defer release()
	r.waitRepairs(t, 2*time.Minute, repair.OutcomeRestarted, 2)
	r.waitRepairs(t, 2*time.Minute, repair.OutcomeBudgetSpent, 1)
	r.waitEvent(t, corev1.EventTypeWarning, "RepairBudgetSpent")
	text, err := r.d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if left := harness.MetricValue(text, `hangwatch_repair_budget_remaining{target="runtime"}`); left != 0 {
		t.Errorf("budget remaining = %v, want 0", left)
	}
	if got := r.repairs(repair.OutcomeRestarted); got != 2 {
		t.Errorf("restarted = %v when the budget was spent, want 2 (a dry run counts in the hour too)", got)
	}
}

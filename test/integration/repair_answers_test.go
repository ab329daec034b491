package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// answersRig is containerd under a real systemd, the fault proxy in front
// of it, and a standalone hangwatch with repair on and restartRuntimeAfter
// 5s: a wait shorter than the shipped 20 s, so that a runtime answering
// every call 2.5 s late is within a factor of two of being killed.
type answersRig struct {
	c      *containerd.Containerd
	sd     *systemd.Systemd
	proxy  *criproxy.Proxy
	config string
	state  string
	d      *hangwatch.Daemon
}

const answersWait = 5 * time.Second

func startAnswersRig(t *testing.T) *answersRig {
	t.Helper()
	r := &answersRig{}
	r.c, r.sd = containerd.StartUnderSystemdT(t, 1, 1)
	dir := hangwatch.SocketDir(t)
	var err error
	if r.proxy, err = criproxy.Start(filepath.Join(dir, "cri.sock"), r.c.Socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.proxy.Stop)
	r.config, r.state = filepath.Join(dir, "hangwatch.yaml"), filepath.Join(dir, "repair-budget.json")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nrepair:\n  enabled: true\n  systemdSocket: %s\n"+
		"  runtimeUnit: %s\n  runtimeSocket: %s\n  restartRuntimeAfter: %s\n  stateFile: %s\n",
		r.sd.Socket(), containerd.Unit, r.c.Socket, answersWait, r.state)
	if err := os.WriteFile(r.config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r.d = r.startHangwatch(t)
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { return r.d.RuntimeHung(t) == "False" }, harness.UnlessExited(r.d))
	return r
}

// startHangwatch starts hangwatch on the rig's config and state file; it
// answers on its port when this returns.
func (r *answersRig) startHangwatch(t *testing.T) *hangwatch.Daemon {
	t.Helper()
	return hangwatch.StartRepairing(t, r.proxy.Endpoint, "--config", r.config, "--repair-state-file", r.state)
}

func (r *answersRig) mainPID(t *testing.T) int { return containerdMainPID(t, r.sd) }

// noRepairFor checks for d that repair decided nothing and containerd's
// main process is still pid; it returns whether RuntimeHung was seen True
// meanwhile.
func (r *answersRig) noRepairFor(t *testing.T, d time.Duration, pid int) bool {
	t.Helper()
	hung, why := false, ""
	harness.Throughout(t, d, "no repair", func() bool {
		hung = hung || r.d.RuntimeHung(t) == "True"
		for _, o := range repair.Outcomes {
			if n := runtimeRepairs(r.d, o); n > 0 {
				why = fmt.Sprintf("repair decided %s (%v) for a runtime that answers", o, n)
				return false
			}
		}
		if now := r.mainPID(t); now != pid {
			why = fmt.Sprintf("containerd's main PID %d -> %d: killed", pid, now)
			return false
		}
		return true
	}, harness.UnlessExited(r.d), harness.Explaining(func() string { return why }))
	return hung
}

// TestRepairLeavesARuntimeThatAnswers: repair kills only a runtime that
// gives no answer at all for its wait, however slow its answers.
//   - Slow but answering: ListContainers, then separately ListPodSandbox,
//     answers every call 2.5 s late (past the 2 s detection timeout) for
//     45 s: RuntimeHung may be True, nothing is killed (the review saw 3
//     kills in 150 s);
//   - an operator's restart: containerd stopped for 40 s and started again,
//     its first ListPodSandbox answers 2.5 s late: nothing is killed (the
//     review saw a kill 1 s after the first slow answer);
//   - hangwatch killed and started again 5 times during a hang no restart
//     cures (the proxy holds Version): 3 kills in all, maxRestartsPerHour,
//     the budget kept in repair.stateFile (the review saw 3 a start).
func TestRepairLeavesARuntimeThatAnswers(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	r := startAnswersRig(t)
	pid := r.mainPID(t)
	for _, method := range []string{"ListContainers", "ListPodSandbox"} {
		release := r.proxy.Inject(criproxy.Fault{Method: method, Delay: 2500 * time.Millisecond})
		hung := r.noRepairFor(t, 45*time.Second, pid)
		release()
		t.Logf("%s answering 2.5s late for 45s: RuntimeHung seen True: %v; no repair", method, hung)
	}
	r.operatorRestart(t)
	r.budgetSurvivesRestarts(t)
}

// operatorRestart stops containerd's unit for 40 s, then starts it again
// with its first ListPodSandbox answers 2.5 s late.
func (r *answersRig) operatorRestart(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.sd.StopUnit(ctx, containerd.Unit); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "RuntimeHung True (RuntimeUnreachable)", func() bool { return r.d.RuntimeHung(t) == "True" })
	stopped := time.Now()
	harness.Eventually(t, time.Minute, "40s stopped", func() bool { return time.Since(stopped) > 40*time.Second })
	release := r.proxy.Inject(criproxy.Fault{Method: "ListPodSandbox", Delay: 2500 * time.Millisecond})
	if err := r.sd.StartUnit(ctx, containerd.Unit); err != nil {
		t.Fatal(err)
	}
	var pid int
	harness.Eventually(t, 30*time.Second, "containerd started again", func() bool {
		pid, _ = r.sd.MainPID(ctx, containerd.Unit)
		return pid != 0
	})
	r.noRepairFor(t, 20*time.Second, pid)
	release()
	harness.Eventually(t, time.Minute, "RuntimeHung False", func() bool { return r.d.RuntimeHung(t) == "False" })
	t.Logf("containerd stopped 40s and started again with slow first answers: no repair")
}

// budgetSurvivesRestarts holds Version and starts hangwatch 5 times, each
// until it has restarted containerd or found its budget spent.
func (r *answersRig) budgetSurvivesRestarts(t *testing.T) {
	t.Helper()
	release := r.proxy.Inject(criproxy.Fault{Method: "Version"})
	defer release()
	restarts, spent := 0.0, 0.0
	for i := range 5 {
		if i > 0 {
			r.d = r.startHangwatch(t)
		}
		harness.Eventually(t, 2*time.Minute, fmt.Sprintf("hangwatch start %d to restart containerd or find its budget spent", i+1), func() bool {
			return runtimeRepairs(r.d, repair.OutcomeRestarted) > 0 || runtimeRepairs(r.d, repair.OutcomeBudgetSpent) > 0
		}, harness.UnlessExited(r.d))
		restarts += runtimeRepairs(r.d, repair.OutcomeRestarted)
		spent += runtimeRepairs(r.d, repair.OutcomeBudgetSpent)
		r.d.Stop(t)
	}
	if restarts != repair.DefaultMaxRestartsPerHour || spent != 2 {
		t.Errorf("5 hangwatch starts: %v restarts, %v budget-spent; want %d and 2", restarts, spent, repair.DefaultMaxRestartsPerHour)
	}
	if raw, err := os.ReadFile(r.state); err != nil || !strings.Contains(string(raw), `"runtime":[`) {
		t.Errorf("repair.stateFile: %s, %v", raw, err)
	}
}

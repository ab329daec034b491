package integration

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// userSkipped is the series counting the user-facility records a rules
// file of source src left out.
func userSkipped(src string) string {
	return `hangwatch_kernel_records_facility_skipped_total{facility="user",source="` + src + `"}`
}

// writeUserLineSkipped writes line to /dev/kmsg as `echo '<2>line' >
// /dev/kmsg` would (priority 2, which the kernel tags facility user:
// priority 10) and waits until d has read it and left it out.
func writeUserLineSkipped(t *testing.T, d *daemon, src, line string) {
	t.Helper()
	series := userSkipped(src)
	text, _ := d.get("/metrics")
	before := max(metricValue(text, series), 0)
	writeKmsgAt(t, 2, line)
	harness.Eventually(t, 10*time.Second, "the user-facility line read and left out", func() bool {
		text, _ := d.get("/metrics")
		return metricValue(text, series) > before
	}, harness.UnlessExited(d))
}

// stillFalse fails if condType leaves False within d (a read after the
// skip counter moved: a match would have raised it by then).
func (d *daemon) stillFalse(t *testing.T, condType string, within time.Duration) {
	t.Helper()
	var reason, msg string
	harness.Throughout(t, within, condType+" False", func() bool {
		var st string
		st, reason, msg = d.condition(t, condType)
		return st == "False"
	}, harness.Every(100*time.Millisecond), harness.UnlessExited(d),
		harness.Explaining(func() string { return reason + ": " + msg }))
}

// TestUserFacilityKmsgLineRaisesNothing: any root process may write to
// /dev/kmsg (`echo '<2>INFO: task containerd:1 blocked for more than 120
// seconds.' > /dev/kmsg` from a container); the kernel tags it facility
// user, and the built-in rules, as shipped, match the kernel's own records
// alone: no KernelDeadlock (hangwatch-remedy would taint the node at once),
// no event.
func TestUserFacilityKmsgLineRaisesNothing(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := sharedContainerd(t)
	pid := 1000000 + rand.Intn(8000000)
	d := startDaemon(t, c.Endpoint, "--kernel-lookback", "0s")
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))
	writeUserLineSkipped(t, d, "hangwatch-kernel", fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid))
	d.stillFalse(t, "KernelDeadlock", 2*time.Second)
	if body, _ := d.get("/events"); strings.Contains(body, "ContainerRuntimeTaskBlocked") || strings.Contains(body, "TaskHung") {
		t.Errorf("a user-facility line made a kernel event:\n%s", body)
	}
	text, _ := d.get("/metrics")
	if v := metricValue(text, `hangwatch_kernel_rule_matches_total{reason="ContainerRuntimeTaskBlocked",rule="runtime-task-blocked"}`); v > 0 {
		t.Errorf("runtime-task-blocked matched %v times, want none", v)
	}
}

// TestKernelDeadlockFromTheKernelsOwnLine raises KernelDeadlock from a
// hung-task line the kernel itself logs (facility kern), with a rules file
// that names no facilities, as shipped: a mkdir held in D by a FUSE
// directory that never answers (harness.StuckDir), and the kernel's
// hung-task timeout lowered to 3 s, so it logs "INFO: task mkdir:N blocked
// for more than 3 seconds.". The same text written to /dev/kmsg first
// (facility user) raises nothing. It changes the hung-task timeout for the
// whole machine for a few seconds (a containerd of a test beside it caught
// in a slow fsync would be reported), so, as TestStuckDirHungTaskReported,
// it runs only in the e2e suite:
//
//	go test -tags e2e -run TestKernelDeadlockFromTheKernelsOwnLine ./test/integration/
func TestKernelDeadlockFromTheKernelsOwnLine(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	harness.RequireSuite(t, harness.SuiteE2E, "changes the kernel's hung-task timeout for the whole machine")
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and /dev/fuse (harness.StuckDir): euid %d, %v", os.Geteuid(), err)
	}
	c := sharedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stuck, err := harness.NewStuckDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stuck.Release)
	pid, err := stuck.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, c.Endpoint, "--kernel-lookback", "1m", "--kernel-rules", mkdirRulesFile(t, pid))
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))
	line := fmt.Sprintf("INFO: task mkdir:%d blocked for more than 3 seconds.", pid)
	writeUserLineSkipped(t, d, "hw-mkdir", line)
	d.stillFalse(t, "KernelDeadlock", time.Second)

	restore, err := harness.SetHungTaskTimeout(3)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	lowered := time.Now()
	harness.Eventually(t, 30*time.Second, "KernelDeadlock True from the kernel's line", func() bool {
		st, reason, _ := d.condition(t, "KernelDeadlock")
		return st == "True" && reason == "MkdirTaskBlocked"
	}, harness.UnlessExited(d))
	restore() // at once: the machine's other tasks are not to be reported
	measure(t, "kernel_deadlock_raised_after_hung_task_timeout_lowered", time.Since(lowered))
	if _, _, msg := d.condition(t, "KernelDeadlock"); strings.Contains(msg, fmt.Sprintf("mkdir:%d", pid)) ||
		!strings.HasPrefix(msg, fmt.Sprintf(ruleMessage, "mkdir-blocked", "MkdirTaskBlocked")) {
		t.Errorf("KernelDeadlock's message %q: want the rule, never the line", msg)
	}
	if log, _ := os.ReadFile(d.logPath); !strings.Contains(string(log), line) {
		t.Errorf("hangwatch's log lacks the kernel's line %q", line)
	}
}

// mkdirRulesFile owns KernelDeadlock with one rule for the hung-task line
// of pid; it names no facilities: kern alone, as the built-in rules.
func mkdirRulesFile(t *testing.T, pid int) string {
	t.Helper()
	body := fmt.Sprintf(`{"source": "hw-mkdir",
  "conditions": [{"type": "KernelDeadlock", "reason": "KernelHasNoDeadlock", "message": "kernel has no deadlock"}],
  "rules": [{"name": "mkdir-blocked", "type": "permanent", "condition": "KernelDeadlock", "reason": "MkdirTaskBlocked",
    "pattern": "task mkdir:%d blocked for more than \\d+ seconds\\.", "clearAfter": "1m"}]}`, pid)
	path := filepath.Join(t.TempDir(), "mkdir-rules.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

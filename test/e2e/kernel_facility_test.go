package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/stuckdir"
)

// TestKernelDeadlockFromTheKernelsOwnLine raises KernelDeadlock from a
// hung-task line the kernel itself logs (facility kern), with a rules file
// that names no facilities, as shipped: a mkdir held in D by a FUSE
// directory that never answers (stuckdir.Dir), and the kernel's
// hung-task timeout lowered to 3 s, so it logs "INFO: task mkdir:N blocked
// for more than 3 seconds.". The same text written to /dev/kmsg first
// (facility user) raises nothing. It changes the hung-task timeout for the
// whole machine for a few seconds (a containerd of a test beside it caught
// in a slow fsync would be reported), so, as TestStuckDirHungTaskReported,
// it is in the e2e suite:
//
//	HANGWATCH_SUITE=e2e go test -run TestKernelDeadlockFromTheKernelsOwnLine ./test/e2e/
func TestKernelDeadlockFromTheKernelsOwnLine(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and /dev/fuse (stuckdir.Dir): euid %d, %v", os.Geteuid(), err)
	}
	c := hangwatch.SharedContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stuck, err := stuckdir.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stuck.Release)
	pid, err := stuck.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "1m", "--kernel-rules", mkdirRulesFile(t, pid))
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.Condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))
	line := fmt.Sprintf("INFO: task mkdir:%d blocked for more than 3 seconds.", pid)
	hangwatch.WriteUserLineSkipped(t, d, "hw-mkdir", line)
	d.StillFalse(t, "KernelDeadlock", time.Second)

	restore, err := harness.SetHungTaskTimeout(3)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	lowered := time.Now()
	harness.Eventually(t, 30*time.Second, "KernelDeadlock True from the kernel's line", func() bool {
		st, reason, _ := d.Condition(t, "KernelDeadlock")
		return st == "True" && reason == "MkdirTaskBlocked"
	}, harness.UnlessExited(d))
	restore() // at once: the machine's other tasks are not to be reported
	harness.Measure(t, "kernel_deadlock_raised_after_hung_task_timeout_lowered", time.Since(lowered))
	if _, _, msg := d.Condition(t, "KernelDeadlock"); strings.Contains(msg, fmt.Sprintf("mkdir:%d", pid)) ||
		!strings.HasPrefix(msg, fmt.Sprintf(hangwatch.RuleMessage, "mkdir-blocked", "MkdirTaskBlocked")) {
		t.Errorf("KernelDeadlock's message %q: want the rule, never the line", msg)
	}
	if log, _ := os.ReadFile(d.LogPath); !strings.Contains(string(log), line) {
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

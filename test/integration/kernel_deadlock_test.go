package integration

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// writeKmsg logs one line through the real /dev/kmsg, at info level so it
// does not go to the console. The kernel tags a write to /dev/kmsg with
// facility user, never kern (kernellog/facility.go): the built-in rules do
// not match it, so a test that wants it matched runs hangwatch with
// userFacilityRules.
func writeKmsg(t *testing.T, line string) { hangwatch.WriteKmsgAt(t, 6, line) }

func TestKernelDeadlockFromRealKmsg(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := hangwatch.SharedContainerd(t)
	// A unique PID marks this run's lines; lookback 0 ignores earlier runs'.
	pid := 1000000 + rand.Intn(8000000)
	hung := fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid)
	oom := fmt.Sprintf("Memory cgroup out of memory: Killed process %d (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", pid)
	rules := hangwatch.UserFacilityRules(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rules", rules)
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.Condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))

	wantMsg := fmt.Sprintf(hangwatch.RuleMessage, "runtime-task-blocked", "ContainerRuntimeTaskBlocked")
	raiseFromKmsg(t, d, hung, "KernelDeadlock", wantMsg, "kernel_deadlock_raised_after_kmsg_line")
	if _, reason, _ := d.Condition(t, "KernelDeadlock"); reason != "ContainerRuntimeTaskBlocked" {
		t.Errorf("reason = %s, want ContainerRuntimeTaskBlocked", reason)
	}

	writeKmsg(t, oom)
	// The plain port names the event but withholds the kernel line (the
	// secure port serves it: TestSecurePort); lookback 0 makes any
	// OOMKilling this run's.
	harness.Eventually(t, 10*time.Second, "the OOMKilling event", func() bool {
		body, _ := d.Get("/events")
		return strings.Contains(body, `"reason": "OOMKilling"`)
	}, harness.UnlessExited(d))
	marks := []string{fmt.Sprintf("containerd:%d", pid), fmt.Sprintf("process %d", pid)}
	body, _ := d.Get("/events")
	if containsAny(body, marks) || !strings.Contains(body, "withheld") || !strings.Contains(body, `"condition": "KernelDeadlock"`) {
		t.Errorf("the unauthenticated /events must list the raising event and withhold kernel lines:\n%s", body)
	}
	if body, _ := d.Get("/conditions"); containsAny(body, marks) {
		t.Errorf("the kernel line is on /conditions:\n%s", body)
	}
	if _, _, msg := d.Condition(t, "KernelDeadlock"); !strings.HasPrefix(msg, wantMsg) {
		t.Errorf("after the OOM line KernelDeadlock says %q; an OOM kill must be an event, not a condition", msg)
	}
	if log, _ := os.ReadFile(d.LogPath); !strings.Contains(string(log), hung) {
		t.Errorf("hangwatch's log lacks the line that raised KernelDeadlock (%q)", hung)
	}

	// A restart reads the lookback window and carries the deadlock on.
	restarted := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "5m", "--kernel-rules", rules)
	harness.Eventually(t, 30*time.Second, "KernelDeadlock True from the lookback", func() bool {
		st, _, msg := restarted.Condition(t, "KernelDeadlock")
		return st == "True" && strings.HasPrefix(msg, wantMsg)
	}, harness.UnlessExited(restarted))
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := harness.MetricValue(text, `hangwatch_kernel_rule_matches_total{reason="OOMKilling",rule="oom-kill"}`); v < 1 {
		t.Errorf("OOMKilling matches = %v, want at least 1", v)
	}
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// raiseFromKmsg writes line to the real /dev/kmsg and waits until d
// reports condType True with a message starting with wantMsg; the time
// that took is recorded as measurement, and must be within a second
// (bound 5 s on shared machines).
func raiseFromKmsg(t *testing.T, d *hangwatch.Daemon, line, condType, wantMsg, measurement string) {
	t.Helper()
	written := time.Now()
	writeKmsg(t, line)
	harness.Eventually(t, 10*time.Second, condType+" True", func() bool {
		st, _, msg := d.Condition(t, condType)
		return st == "True" && strings.HasPrefix(msg, wantMsg)
	}, harness.UnlessExited(d))
	raised := time.Since(written)
	harness.Measure(t, measurement, raised)
	if raised > 5*time.Second {
		t.Errorf("%s took %v, want within a second (bound 5s on shared machines)", condType, raised)
	}
}

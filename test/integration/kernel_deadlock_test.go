package integration

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/test/harness"
)

// writeKmsg logs one line through the real /dev/kmsg, at info level so it
// does not go to the console. The kernel tags a write to /dev/kmsg with
// facility user, never kern (kernellog/facility.go): the built-in rules do
// not match it, so a test that wants it matched runs hangwatch with
// userFacilityRules.
func writeKmsg(t *testing.T, line string) { writeKmsgAt(t, 6, line) }

// writeKmsgAt writes line with the prefix "<prio>".
func writeKmsgAt(t *testing.T, prio int, line string) {
	t.Helper()
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/kmsg: %v", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "<%d>%s\n", prio, line); err != nil {
		t.Fatalf("write /dev/kmsg: %v", err)
	}
}

// userFacilityRules writes hangwatch's built-in kernel rules with
// "facilities": ["kern", "user"], so that the lines a test writes to
// /dev/kmsg (facility user) match as the kernel's would: the tests' way to
// stand in for the kernel. TestKernelDeadlockFromTheKernelsOwnLine raises
// KernelDeadlock from a line the kernel itself logs, with the built-in
// rules as shipped.
func userFacilityRules(t *testing.T) string {
	t.Helper()
	set := kernellog.DefaultRuleSet()
	set.Facilities = []string{"kern", "user"}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kernel-rules-user.json")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ruleMessage is what a kernel condition raised by the built-in rule name
// says: the rule and reason, never the line.
const ruleMessage = `kernel log rule "%s" (reason %s) matched at `

func TestKernelDeadlockFromRealKmsg(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := sharedContainerd(t)
	// A unique PID marks this run's lines; lookback 0 ignores earlier runs'.
	pid := 1000000 + rand.Intn(8000000)
	hung := fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid)
	oom := fmt.Sprintf("Memory cgroup out of memory: Killed process %d (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", pid)
	rules := userFacilityRules(t)
	d := startDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rules", rules)
	harness.Eventually(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.condition(t, "KernelDeadlock")
		return st == "False"
	}, harness.UnlessExited(d))

	written := time.Now()
	writeKmsg(t, hung)
	wantMsg := fmt.Sprintf(ruleMessage, "runtime-task-blocked", "ContainerRuntimeTaskBlocked")
	harness.Eventually(t, 10*time.Second, "KernelDeadlock True", func() bool {
		st, _, msg := d.condition(t, "KernelDeadlock")
		return st == "True" && strings.HasPrefix(msg, wantMsg)
	}, harness.UnlessExited(d))
	raised := time.Since(written)
	measure(t, "kernel_deadlock_raised_after_kmsg_line", raised)
	if raised > 5*time.Second {
		t.Errorf("KernelDeadlock took %v, want within a second (bound 5s on shared machines)", raised)
	}
	if _, reason, _ := d.condition(t, "KernelDeadlock"); reason != "ContainerRuntimeTaskBlocked" {
		t.Errorf("reason = %s, want ContainerRuntimeTaskBlocked", reason)
	}

	writeKmsg(t, oom)
	// The plain port names the event but withholds the kernel line (the
	// secure port serves it: TestSecurePort); lookback 0 makes any
	// OOMKilling this run's.
	harness.Eventually(t, 10*time.Second, "the OOMKilling event", func() bool {
		body, _ := d.get("/events")
		return strings.Contains(body, `"reason": "OOMKilling"`)
	}, harness.UnlessExited(d))
	marks := []string{fmt.Sprintf("containerd:%d", pid), fmt.Sprintf("process %d", pid)}
	body, _ := d.get("/events")
	if containsAny(body, marks) || !strings.Contains(body, "withheld") || !strings.Contains(body, `"condition": "KernelDeadlock"`) {
		t.Errorf("the unauthenticated /events must list the raising event and withhold kernel lines:\n%s", body)
	}
	if body, _ := d.get("/conditions"); containsAny(body, marks) {
		t.Errorf("the kernel line is on /conditions:\n%s", body)
	}
	if _, _, msg := d.condition(t, "KernelDeadlock"); !strings.HasPrefix(msg, wantMsg) {
		t.Errorf("after the OOM line KernelDeadlock says %q; an OOM kill must be an event, not a condition", msg)
	}
	if log, _ := os.ReadFile(d.logPath); !strings.Contains(string(log), hung) {
		t.Errorf("hangwatch's log lacks the line that raised KernelDeadlock (%q)", hung)
	}

	// A restart reads the lookback window and carries the deadlock on.
	restarted := startDaemon(t, c.Endpoint, "--kernel-lookback", "5m", "--kernel-rules", rules)
	harness.Eventually(t, 30*time.Second, "KernelDeadlock True from the lookback", func() bool {
		st, _, msg := restarted.condition(t, "KernelDeadlock")
		return st == "True" && strings.HasPrefix(msg, wantMsg)
	}, harness.UnlessExited(restarted))
	text, err := d.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := metricValue(text, `hangwatch_kernel_rule_matches_total{reason="OOMKilling",rule="oom-kill"}`); v < 1 {
		t.Errorf("OOMKilling matches = %v, want at least 1", v)
	}
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

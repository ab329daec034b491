package integration

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
)

// writeKmsg logs one line through the real /dev/kmsg, at info level so it
// does not go to the console.
func writeKmsg(t *testing.T, line string) {
	t.Helper()
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/kmsg: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString("<6>" + line + "\n"); err != nil {
		t.Fatalf("write /dev/kmsg: %v", err)
	}
}

func (d *daemon) condition(t *testing.T, condType string) (status, reason, message string) {
	t.Helper()
	body, err := d.get("/conditions")
	if err != nil {
		return "", "", ""
	}
	var out struct {
		Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("/conditions: %v", err)
	}
	for _, c := range out.Conditions {
		if c.Type == condType {
			return c.Status, c.Reason, c.Message
		}
	}
	return "", "", ""
}

func TestKernelDeadlockFromRealKmsg(t *testing.T) {
	c := sharedContainerd(t)
	// A unique PID marks this run's lines; lookback 0 ignores earlier runs'.
	pid := 1000000 + rand.Intn(8000000)
	hung := fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", pid)
	oom := fmt.Sprintf("Memory cgroup out of memory: Killed process %d (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", pid)
	d := startDaemon(t, c.Endpoint, "--kernel-lookback", "0s")
	d.waitFor(t, 30*time.Second, "KernelDeadlock False", func() bool {
		st, _, _ := d.condition(t, "KernelDeadlock")
		return st == "False"
	})

	written := time.Now()
	writeKmsg(t, hung)
	d.waitFor(t, 10*time.Second, "KernelDeadlock True", func() bool {
		st, _, msg := d.condition(t, "KernelDeadlock")
		return st == "True" && msg == hung
	})
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
	d.waitFor(t, 10*time.Second, "the OOMKilling event", func() bool {
		body, _ := d.get("/events")
		return strings.Contains(body, `"reason": "OOMKilling"`)
	})
	if body, _ := d.get("/events"); strings.Contains(body, fmt.Sprintf("Killed process %d", pid)) || !strings.Contains(body, "withheld") {
		t.Errorf("the unauthenticated /events must withhold kernel lines:\n%s", body)
	}
	if _, _, msg := d.condition(t, "KernelDeadlock"); msg != hung {
		t.Errorf("after the OOM line KernelDeadlock says %q; an OOM kill must be an event, not a condition", msg)
	}

	// A restart reads the lookback window and carries the deadlock on.
	restarted := startDaemon(t, c.Endpoint, "--kernel-lookback", "5m")
	restarted.waitFor(t, 30*time.Second, "KernelDeadlock True from the lookback", func() bool {
		st, _, msg := restarted.condition(t, "KernelDeadlock")
		return st == "True" && strings.Contains(msg, "blocked for more than")
	})
	text, err := d.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := metricValue(text, `hangwatch_kernel_rule_matches_total{reason="OOMKilling",rule="oom-kill"}`); v < 1 {
		t.Errorf("OOMKilling matches = %v, want at least 1", v)
	}
}

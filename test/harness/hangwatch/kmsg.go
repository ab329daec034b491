package hangwatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/test/harness"
)

// WriteKmsgAt writes line with the prefix "<prio>".
func WriteKmsgAt(t *testing.T, prio int, line string) {
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

// UserFacilityRules writes hangwatch's built-in kernel rules with
// "facilities": ["kern", "user"], so that the lines a test writes to
// /dev/kmsg (facility user) match as the kernel's would: the tests' way to
// stand in for the kernel. TestKernelDeadlockFromTheKernelsOwnLine raises
// KernelDeadlock from a line the kernel itself logs, with the built-in
// rules as shipped.
func UserFacilityRules(t *testing.T) string {
	t.Helper()
	return writeUserFacility(t, kernellog.DefaultRuleSet(), "kernel-rules-user.json")
}

// UserFacilityPack is UserFacilityRules for a shipped rule pack (gpu).
func UserFacilityPack(t *testing.T, name string) string {
	t.Helper()
	set, err := kernellog.RulePack(name)
	if err != nil {
		t.Fatal(err)
	}
	return writeUserFacility(t, set, "kernel-rules-"+name+"-user.json")
}

func writeUserFacility(t *testing.T, set *kernellog.RuleSet, name string) string {
	t.Helper()
	set.Facilities = []string{"kern", "user"}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// RuleMessage is what a kernel condition raised by the built-in rule name
// says: the rule and reason, never the line.
const RuleMessage = `kernel log rule "%s" (reason %s) matched at `

// UserSkipped is the series counting the user-facility records a rules
// file of source src left out.
func UserSkipped(src string) string {
	return `hangwatch_kernel_records_facility_skipped_total{facility="user",source="` + src + `"}`
}

// WriteUserLineSkipped writes line to /dev/kmsg as `echo '<2>line' >
// /dev/kmsg` would (priority 2, which the kernel tags facility user:
// priority 10) and waits until d has read it and left it out.
func WriteUserLineSkipped(t *testing.T, d *Daemon, src, line string) {
	t.Helper()
	series := UserSkipped(src)
	text, _ := d.Get("/metrics")
	before := max(harness.MetricValue(text, series), 0)
	WriteKmsgAt(t, 2, line)
	harness.Eventually(t, 10*time.Second, "the user-facility line read and left out", func() bool {
		text, _ := d.Get("/metrics")
		return harness.MetricValue(text, series) > before
	}, harness.UnlessExited(d))
}

// AllowKmsgWrites lifts the kernel's rate limit on writes to /dev/kmsg for
// the test (kernel.printk_devkmsg), restoring it after.
func AllowKmsgWrites(t *testing.T) {
	const knob = "/proc/sys/kernel/printk_devkmsg"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knob, []byte("on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(knob, old, 0o644) })
}

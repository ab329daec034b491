package integration

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestGPUXidFromRealKmsg writes NVIDIA Xid lines through the real
// /dev/kmsg, the GPU pack opted in to the user facility as the demo's
// rules are (a write to /dev/kmsg is facility user): an Xid 79 raises
// GPUUnavailable, its message naming the Xid and the PCI address and never
// the pid; an application's Xid 13 is an event and changes no condition;
// an OOM kill, an event of the default rules, promoted
// (--kernel-promote-event) raises a condition of its own.
func TestGPUXidFromRealKmsg(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := hangwatch.SharedContainerd(t)
	pid := 1000000 + rand.Intn(8000000)
	pci := fmt.Sprintf("0000:%02x:00", 0x10+rand.Intn(0xe0))
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rules", hangwatch.UserFacilityRules(t),
		"--kernel-rules", hangwatch.UserFacilityPack(t, "gpu"), "--kernel-promote-event", "OOMKilling=OOMKills/10m")
	harness.Eventually(t, 30*time.Second, "GPUUnavailable and OOMKills False", func() bool {
		gpu, _, _ := d.Condition(t, "GPUUnavailable")
		oom, _, _ := d.Condition(t, "OOMKills")
		return gpu == "False" && oom == "False"
	}, harness.UnlessExited(d))

	writeKmsg(t, fmt.Sprintf("NVRM: Xid (PCI:%s): 13, pid=%d, name=cuda_app, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address", pci, pid))
	harness.Eventually(t, 10*time.Second, "the GPUApplicationError event", func() bool {
		body, _ := d.Get("/events")
		return strings.Contains(body, `"reason": "GPUApplicationError"`)
	}, harness.UnlessExited(d))
	if st, _, _ := d.Condition(t, "GPUUnavailable"); st != "False" {
		t.Errorf("an application's Xid 13 made GPUUnavailable %s", st)
	}

	want := fmt.Sprintf("Xid 79 on the GPU at PCI %s: the GPU has fallen off the bus (kernel log rule \"gpu-xid-79-fallen-off-bus\"", pci)
	raiseFromKmsg(t, d, fmt.Sprintf("NVRM: Xid (PCI:%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", pci),
		"GPUUnavailable", want, "gpu_unavailable_raised_after_kmsg_line")
	if _, reason, msg := d.Condition(t, "GPUUnavailable"); reason != "GPUFallenOffBus" || strings.Contains(msg, "unknown") {
		t.Errorf("GPUUnavailable: reason %s, message %q; want GPUFallenOffBus and no pid", reason, msg)
	}
	if st, _, _ := d.Condition(t, "GPUDegraded"); st != "False" {
		t.Errorf("GPUDegraded = %s after an Xid 79", st)
	}

	writeKmsg(t, fmt.Sprintf("Memory cgroup out of memory: Killed process %d (stress) total-vm:262144kB, anon-rss:256512kB, file-rss:1024kB, shmem-rss:0kB, UID:0 pgtables:560kB oom_score_adj:999", pid))
	harness.Eventually(t, 10*time.Second, "OOMKills True, the promoted event", func() bool {
		st, reason, _ := d.Condition(t, "OOMKills")
		return st == "True" && reason == "OOMKilling"
	}, harness.UnlessExited(d))
}

// TestGPURulePackAsShipped loads the pack by name (--kernel-rule-packs
// gpu): its conditions are reported, and a line written to /dev/kmsg
// (facility user) is left out, as only the kernel's own lines count.
func TestGPURulePackAsShipped(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd, harness.LaneKmsg)
	c := hangwatch.SharedContainerd(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rule-packs", "gpu")
	harness.Eventually(t, 30*time.Second, "GPUUnavailable and GPUDegraded False", func() bool {
		u, _, _ := d.Condition(t, "GPUUnavailable")
		g, _, _ := d.Condition(t, "GPUDegraded")
		return u == "False" && g == "False"
	}, harness.UnlessExited(d))
	hangwatch.WriteUserLineSkipped(t, d, "hangwatch-gpu", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.")
	if st, _, _ := d.Condition(t, "GPUUnavailable"); st != "False" {
		t.Errorf("a userspace Xid line made GPUUnavailable %s", st)
	}
}

// TestAGPUMissingFromTheRealPCIBus runs the binary as shipped with the GPU
// inventory on this machine's real /sys/bus/pci/devices: the file
// remembers a GPU at an address no machine here has (0000:ff:1f.7), so
// the start raises GPUDegraded naming it, and the file still remembers it
// (with any NVIDIA GPU this machine has).
func TestAGPUMissingFromTheRealPCIBus(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	const gone = "0000:ff:1f.7"
	inventory := filepath.Join(t.TempDir(), "gpu", "gpus.json")
	if err := os.MkdirAll(filepath.Dir(inventory), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inventory, []byte(`{"gpus":["`+gone+`"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := hangwatch.SharedContainerd(t)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel-lookback", "0s", "--kernel-rule-packs", "gpu",
		"--kernel-gpu-inventory-file", inventory)
	var reason, message string
	harness.Eventually(t, 30*time.Second, "GPUDegraded True", func() bool {
		var st string
		st, reason, message = d.Condition(t, "GPUDegraded")
		return st == "True"
	}, harness.UnlessExited(d))
	if reason != "GPUCountDropped" || !strings.Contains(message, "missing: "+gone) || !strings.Contains(message, "where 1 were before") {
		t.Errorf("GPUDegraded: reason %q, message %q", reason, message)
	}
	if st, _, _ := d.Condition(t, "GPUUnavailable"); st != "False" {
		t.Errorf("GPUUnavailable = %s, want False", st)
	}
	if b, err := os.ReadFile(inventory); err != nil || !strings.Contains(string(b), gone) {
		t.Errorf("the inventory after the start: %q, %v; want it to still remember %s", b, err, gone)
	}
	t.Logf("GPUDegraded: %s", message)
}

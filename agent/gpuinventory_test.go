package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/config"
)

// TestAGPUMissingAfterABootHoldsGPUDegraded: the inventory remembers two
// GPUs, the bus shows one; the agent's start raises GPUDegraded with the
// missing address, GPUUnavailable stays False, and the file still
// remembers both. A second bus with both GPUs back leaves GPUDegraded
// False.
func TestAGPUMissingAfterABootHoldsGPUDegraded(t *testing.T) {
	inventory := filepath.Join(t.TempDir(), "gpus.json")
	remembered := `{"gpus":["0000:1b:00.0","0000:87:00.0"]}` + "\n"
	if err := os.WriteFile(inventory, []byte(remembered), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(onBus ...string) *inProcess {
		bus := t.TempDir()
		for _, addr := range onBus {
			d := filepath.Join(bus, addr)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, v := range map[string]string{"vendor": "0x10de\n", "class": "0x030200\n"} {
				if err := os.WriteFile(filepath.Join(d, name), []byte(v), 0o444); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg := config.Default()
		cfg.Server.ListenAddress = "127.0.0.1:0"
		cfg.Kubelet.HealthzURL = ""
		cfg.Kernel.RulePacks = []string{"gpu"}
		cfg.Kernel.GPUInventoryFile = inventory
		return startInProcessWith(t, &config.Loaded{Configuration: cfg}, nil, func(o *Options) { o.PCIDevicesDir = bus })
	}

	p := start("0000:1b:00.0")
	p.stepUntil(t, "GPUDegraded=True", func() bool { return p.onNode(t, "GPUDegraded") == corev1.ConditionTrue })
	msg := p.messageOnNode(t, "GPUDegraded")
	for _, want := range []string{"1 NVIDIA GPUs on the PCI bus where 2 were before", "missing: 0000:87:00.0", inventory} {
		if !strings.Contains(msg, want) {
			t.Errorf("GPUDegraded's message %q lacks %q", msg, want)
		}
	}
	if got := p.onNode(t, "GPUUnavailable"); got != corev1.ConditionFalse {
		t.Errorf("GPUUnavailable = %q, want False: a GPU gone at boot leaves the others' pods running", got)
	}
	if b, _ := os.ReadFile(inventory); string(b) != remembered {
		t.Errorf("the inventory is now %q, want it to still remember both: %q", b, remembered)
	}
	p.stop()

	q := start("0000:1b:00.0", "0000:87:00.0")
	q.stepUntil(t, "GPUDegraded=False with both back", func() bool { return q.onNode(t, "GPUDegraded") == corev1.ConditionFalse })
}

package options

import (
	"strings"
	"testing"

	"github.com/hangwatch/hangwatch/config"
)

func TestRulePacksLoadBesideTheRules(t *testing.T) {
	sets, err := RuleSets(config.Kernel{RulePacks: []string{"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Source != "hangwatch-kernel" || sets[1].Source != "hangwatch-gpu" {
		t.Fatalf("sets %d: want the default rules and the GPU pack", len(sets))
	}
}

func TestPromotedEventsRaiseConditions(t *testing.T) {
	sets, err := RuleSets(config.Kernel{PromotedEvents: []string{"OOMKilling=OOMKills/10m", "XfsError"}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range sets[0].Conditions {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ","); got != "KernelDeadlock,OOMKills,XfsError" {
		t.Fatalf("conditions %s", got)
	}
	for _, r := range sets[0].Rules {
		switch r.Reason {
		case "OOMKilling":
			if r.Type != "permanent" || r.Condition != "OOMKills" || r.QuietWindow == nil || r.QuietWindow.Minutes() != 10 {
				t.Errorf("OOMKilling's rule: %+v", r)
			}
		case "XfsError":
			if r.Type != "permanent" || r.Condition != "XfsError" || r.QuietWindow != nil {
				t.Errorf("XfsError's rule: %+v", r)
			}
		}
	}
}

func TestKernelRuleChoicesNameTheFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		k    config.Kernel
		want string
	}{
		{config.Kernel{RulePacks: []string{"amd"}}, `kernel.rulePacks: rule pack "amd": there is none of that name (there is gpu)`},
		{config.Kernel{PromotedEvents: []string{"OOMKilling=oom kills"}}, `kernel.promotedEvents "OOMKilling=oom kills": condition "oom kills": must be a CamelCase condition type`},
		{config.Kernel{PromotedEvents: []string{"OOMKilling/forever"}}, `kernel.promotedEvents "OOMKilling/forever": clearAfter "forever": must be a duration from 1s to 168h0m0s`},
		{config.Kernel{PromotedEvents: []string{"OOMKilling=Ready"}}, `kernel.promotedEvents "OOMKilling=Ready": condition Ready is the kubelet's; hangwatch never writes it`},
		{config.Kernel{PromotedEvents: []string{"OOMKiling"}}, `kernel.promotedEvents: promote OOMKiling: no event rule of the kernel rules gives reason OOMKiling`},
		{config.Kernel{PromotedEvents: []string{"OOMKilling=KernelDeadlock"}}, `kernel.promotedEvents: promote OOMKilling: condition KernelDeadlock is already raised by the kernel rules`},
		{config.Kernel{GPUInventoryFile: "/var/lib/hangwatch/gpu/gpus.json"}, `kernel.gpuInventoryFile "/var/lib/hangwatch/gpu/gpus.json": a missing GPU raises GPUDegraded, which no kernel rules own: load the gpu rule pack (kernel.rulePacks: [gpu])`},
		{config.Kernel{RulePacks: []string{"gpu"}, GPUInventoryFile: "gpus.json"}, `kernel.gpuInventoryFile "gpus.json": must be an absolute path`},
	} {
		if _, err := RuleSets(tc.k); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v; want %q", tc.k, err, tc.want)
		}
	}
}

package kernellog

import (
	_ "embed"
	"fmt"
)

//go:embed rules/default.json
var defaultRules []byte

//go:embed rules/gpu.json
var gpuRules []byte

// rulePacks are the rule packs shipped beside the default rules, by name,
// each loaded only when asked for (kernel.rulePacks): gpu, NVIDIA's Xid
// errors (GPUUnavailable, GPUDegraded and events).
var rulePacks = map[string][]byte{"gpu": gpuRules}

// RulePack returns a shipped rule pack by name.
func RulePack(name string) (*RuleSet, error) {
	raw, ok := rulePacks[name]
	if !ok {
		return nil, fmt.Errorf("rule pack %q: there is none of that name (there is gpu)", name)
	}
	rs, err := ParseRuleSet(raw)
	if err != nil {
		return nil, fmt.Errorf("built-in rule pack %s is invalid: %w", name, err) // caught by TestTheGPUPackOnEveryXidFixture
	}
	return rs, nil
}

// DefaultRuleSet returns hangwatch's built-in kernel rules: KernelDeadlock
// when the container runtime, its shim, runc, the kubelet or a filesystem
// journal thread is blocked (cleared after 15 quiet minutes), and events for
// other hung tasks, soft lockups, RCU stalls, unregister_netdevice, OOM
// kills, ext4 and XFS errors, NFS servers not responding, I/O errors,
// oopses and BUGs.
func DefaultRuleSet() *RuleSet {
	rs, err := ParseRuleSet(defaultRules)
	if err != nil {
		panic(fmt.Sprintf("built-in kernel rules are invalid: %v", err)) // caught by TestDefaultRulesLoad
	}
	return rs
}

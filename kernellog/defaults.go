package kernellog

import (
	_ "embed"
	"fmt"
)

//go:embed rules/default.json
var defaultRules []byte

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

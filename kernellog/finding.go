package kernellog

import (
	"fmt"
	"strings"
)

// Finding is what a node-local check found, not a kernel line, for a
// condition the rules own: the GPU inventory's GPU missing after a boot
// (package gpus) holds GPUDegraded. It holds the condition active, with
// its reason and message, for the process's life: the checks run once at
// start, so for the boot, as the pack's rules do. A silenced reason
// (SetSilenced) turns it off as it turns off a rule.
type Finding struct {
	Condition string
	Reason    string
	Message   string
}

// Raise holds f's condition active and publishes it. The condition must be
// one the rules own, and the reason CamelCase.
func (m *Monitor) Raise(f Finding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.conds[f.Condition]
	if !ok {
		return fmt.Errorf("finding %s: condition %q is not one the kernel rules own (%s)", f.Reason, f.Condition, strings.Join(m.order, ", "))
	}
	if why := checkReason(f.Reason); why != "" {
		return fmt.Errorf("finding for %s: %s", f.Condition, why)
	}
	now := m.clock.Now()
	rule := &Rule{Type: TypePermanent, Condition: f.Condition, Reason: f.Reason, Name: "finding/" + f.Reason}
	c.rules = append(c.rules, &ruleState{source: "finding", rule: rule, metric: nopCounter{},
		active: true, since: now, first: now, last: now, count: 1, fixed: f.Message})
	m.dirty = true
	m.publish()
	return nil
}

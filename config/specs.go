package config

import (
	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// Specs returns the condition rules: the built-in ones with the file's
// rules merged and the runtimeHung, kubeletUnresponsive and pleg.slowFor
// settings applied to the built-in rules they tune.
func (c *Configuration) Specs() []conditions.Spec {
	specs := conditions.MergeSpecs(conditions.DefaultSpecs(), c.Conditions)
	fromFile := map[string]bool{}
	for _, s := range c.Conditions {
		fromFile[s.Type] = true
	}
	for i := range specs {
		if specs[i].Type != conditions.TypeRuntimeHung {
			continue
		}
		if n := c.RuntimeHung.RaiseAfter; n != nil {
			specs[i].RaiseAfter = *n
		}
		if n := c.RuntimeHung.ClearAfter; n != nil {
			specs[i].ClearAfter = *n
		}
	}
	if share := c.KubeletUnresponsive.Share; share > 0 && !fromFile[conditions.TypeKubeletUnresponsive] { // a rule from the file is the user's own
		specs = conditions.WithLeaseShare(specs, share)
	}
	if !fromFile[conditions.TypePLEGUnhealthy] {
		specs = conditions.WithPLEGSlowFor(specs, c.PLEG.SlowFor.Duration)
	}
	return specs
}

// WithKernelSpecs adds a rule for each condition type the kernel rules
// raise that has none, except those the file disabled: a KernelDeadlock
// left to node-problem-detector stays unwritten.
func (c *Configuration) WithKernelSpecs(specs []conditions.Spec, kernelTypes []kernellog.ConditionSpec) []conditions.Spec {
	for _, k := range kernelTypes {
		if conditions.HasSpec(specs, k.Type) || c.disabled(k.Type) {
			continue
		}
		specs = append(specs, conditions.KernelSpec(k.Type))
	}
	return specs
}

func (c *Configuration) disabled(condType string) bool {
	for _, s := range c.Conditions {
		if s.Type == condType && s.Disabled {
			return true
		}
	}
	return false
}

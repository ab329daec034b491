package options

import (
	"slices"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
)

// Specs returns the condition rules: the built-in ones with the file's
// rules merged and the runtimeHung settings applied to its built-in rule.
// The knobs the rules read as params are config's RuleParams.
func Specs(c *config.Configuration) []conditions.Spec {
	specs := conditions.MergeSpecs(conditions.DefaultSpecs(), c.Conditions)
	for i := range specs {
		specs[i].Silenced = c.SilencedReasons
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
	return specs
}

// WithKernelSpecs adds a rule for each condition type the kernel rules
// raise that has none, except those the file disabled: a KernelDeadlock
// left to node-problem-detector stays unwritten. The built-in
// KernelDeadlock rule goes when the kernel rules do not raise it (a rules
// file of the user's own): hangwatch owns no condition it cannot decide.
func WithKernelSpecs(c *config.Configuration, specs []conditions.Spec, kernelTypes []kernellog.ConditionSpec) []conditions.Spec {
	names := KernelConditionNames(kernelTypes)
	if !slices.Contains(names, conditions.TypeKernelDeadlock) && !fromFile(c, conditions.TypeKernelDeadlock) {
		specs = slices.DeleteFunc(slices.Clone(specs), func(s conditions.Spec) bool { return s.Type == conditions.TypeKernelDeadlock })
	}
	for _, k := range kernelTypes {
		if conditions.HasSpec(specs, k.Type) || disabled(c, k.Type) {
			continue
		}
		ks := conditions.KernelSpec(k.Type)
		ks.Silenced = c.SilencedReasons
		specs = append(specs, ks)
	}
	return specs
}

func fromFile(c *config.Configuration, condType string) bool {
	return slices.ContainsFunc(c.Conditions, func(s conditions.Spec) bool { return s.Type == condType })
}

func disabled(c *config.Configuration, condType string) bool {
	for _, s := range c.Conditions {
		if s.Type == condType && s.Disabled {
			return true
		}
	}
	return false
}

// CheckRules compiles the rules as the agent runs them with the kernel
// rules' condition types known, so a rule naming a kernel condition the
// kernel rules do not raise is refused as a misspelled field is.
func CheckRules(c *config.Configuration, kernelTypes []kernellog.ConditionSpec) error {
	return conditions.CompileSpecs(WithKernelSpecs(c, Specs(c), kernelTypes), c.RuleParams(), KernelConditionNames(kernelTypes))
}

// KernelConditionNames are the condition types of kernelTypes.
func KernelConditionNames(kernelTypes []kernellog.ConditionSpec) []string {
	names := make([]string, 0, len(kernelTypes))
	for _, k := range kernelTypes {
		names = append(names, k.Type)
	}
	return names
}

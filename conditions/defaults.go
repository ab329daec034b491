package conditions

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// DefaultSpecs returns the built-in condition rules.
func DefaultSpecs() []Spec {
	var specs []Spec
	if err := yaml.UnmarshalStrict(defaultsYAML, &specs); err != nil {
		panic(fmt.Sprintf("conditions/defaults.yaml: %v", err)) // embedded: a build-time mistake
	}
	return specs
}

// MergeSpecs applies the config file's specs over the defaults: one of the
// same type replaces the default whole, a disabled one drops it, others add.
func MergeSpecs(defaults, overrides []Spec) []Spec {
	out := append([]Spec(nil), defaults...)
	for _, o := range overrides {
		i := indexOf(out, o.Type)
		switch {
		case i >= 0 && o.Disabled:
			out = append(out[:i], out[i+1:]...)
		case i >= 0:
			out[i] = o
		case !o.Disabled:
			out = append(out, o)
		}
	}
	return out
}

// KernelSpec is the rule of a condition owned by kernel-log rules: it
// follows the rules' state, which has its own clearing (quiet window or
// recovery line).
func KernelSpec(condType string) Spec {
	field := "kernel[" + fmt.Sprintf("%q", condType) + "]"
	return Spec{Type: condType,
		Problems: []Problem{{When: field + ".active",
			Outcome: Outcome{ReasonExpression: field + ".reason", MessageExpression: field + ".message"}}},
		Healthy: Outcome{ReasonExpression: field + ".reason", MessageExpression: field + ".message"}}
}

// HasSpec tells whether specs hold a rule for condType.
func HasSpec(specs []Spec, condType string) bool { return indexOf(specs, condType) >= 0 }

func indexOf(specs []Spec, condType string) int {
	for i := range specs {
		if specs[i].Type == condType {
			return i
		}
	}
	return -1
}

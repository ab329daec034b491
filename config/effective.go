package config

import (
	"fmt"

	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
)

// Effective is c as a file `run` would run the same with: every setting
// with the value in effect, and the condition rules with the built-in ones
// merged (specs). It loads back to the same configuration.
func (c *Configuration) Effective(specs []conditions.Spec) ([]byte, error) {
	s := c.Settings
	if s.Runtime.Timeout == nil {
		s.Runtime.Timeout = &metav1.Duration{Duration: cri.DefaultTimeout}
	}
	for _, spec := range specs { // the rule's own counts, so they load back the same
		if spec.Type == conditions.TypeRuntimeHung {
			s.RuntimeHung = RuntimeHung{RaiseAfter: positive(spec.RaiseAfter), ClearAfter: positive(spec.ClearAfter)}
		}
	}
	body := struct {
		Settings   `json:",inline"`
		Conditions []conditions.Spec `json:"conditions"`
	}{s, specs}
	out, err := yaml.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("print the effective configuration: %w", err)
	}
	header := fmt.Sprintf("apiVersion: %s\nkind: %s\n", APIVersion, Kind)
	return append([]byte(header), out...), nil
}

// positive is &n, or nil for 0 (the rule's default).
func positive(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

package options

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
)

// RuleSets loads the kernel section's rules files, or the built-in rules
// when none is given.
func RuleSets(k config.Kernel) ([]*kernellog.RuleSet, error) {
	if len(k.Rules) == 0 {
		return []*kernellog.RuleSet{kernellog.DefaultRuleSet()}, nil
	}
	sets := make([]*kernellog.RuleSet, 0, len(k.Rules))
	for _, path := range k.Rules {
		rs, err := LoadRuleSet(path)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

// LoadRuleSet loads a rules file and refuses one whose conditions include
// a type the kubelet writes: hangwatch never owns those.
func LoadRuleSet(path string) (*kernellog.RuleSet, error) {
	rs, err := kernellog.LoadRuleSet(path)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, c := range rs.Conditions {
		if slices.Contains(conditions.KubeletConditionTypes, c.Type) {
			errs = append(errs, fmt.Errorf("conditions[%d].type %q: is the kubelet's; hangwatch never writes it", i, c.Type))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("rules file %s: %w", path, errors.Join(errs...))
	}
	return rs, nil
}

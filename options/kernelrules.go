package options

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/gpus"
	"github.com/hangwatch/hangwatch/kernellog"
)

// RuleSets loads the kernel section's rules files, or the built-in rules
// when none is given.
func RuleSets(k config.Kernel) ([]*kernellog.RuleSet, error) {
	sets, err := ruleFiles(k.Rules)
	if err != nil {
		return nil, err
	}
	for _, name := range k.RulePacks {
		rs, err := kernellog.RulePack(name)
		if err != nil {
			return nil, fmt.Errorf("kernel.rulePacks: %w", err)
		}
		sets = append(sets, rs)
	}
	promotions := make([]kernellog.Promotion, 0, len(k.PromotedEvents))
	for _, s := range k.PromotedEvents {
		p, err := kernellog.ParsePromotion(s)
		if err == nil && slices.Contains(conditions.KubeletConditionTypes, p.Condition) {
			err = fmt.Errorf("condition %s is the kubelet's; hangwatch never writes it", p.Condition)
		}
		if err != nil {
			return nil, fmt.Errorf("kernel.promotedEvents %q: %w", s, err)
		}
		promotions = append(promotions, p)
	}
	if err := kernellog.Promote(sets, promotions); err != nil {
		return nil, fmt.Errorf("kernel.promotedEvents: %w", err)
	}
	return sets, checkGPUInventory(k.GPUInventoryFile, sets)
}

// checkGPUInventory refuses an inventory file that is not an absolute path,
// or whose condition no rules own.
func checkGPUInventory(file string, sets []*kernellog.RuleSet) error {
	if file == "" {
		return nil
	}
	if !filepath.IsAbs(file) {
		return fmt.Errorf("kernel.gpuInventoryFile %q: must be an absolute path", file)
	}
	for _, set := range sets {
		for _, c := range set.Conditions {
			if c.Type == gpus.Condition {
				return nil
			}
		}
	}
	return fmt.Errorf("kernel.gpuInventoryFile %q: a missing GPU raises %s, which no kernel rules own: load the gpu rule pack (kernel.rulePacks: [gpu])", file, gpus.Condition)
}

// ruleFiles loads the rules files; none: the built-in rules.
func ruleFiles(paths []string) ([]*kernellog.RuleSet, error) {
	if len(paths) == 0 {
		return []*kernellog.RuleSet{kernellog.DefaultRuleSet()}, nil
	}
	sets := make([]*kernellog.RuleSet, 0, len(paths))
	for _, path := range paths {
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

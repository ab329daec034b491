package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// kernelFlags choose the kernel log and the rules, the same way for run,
// diag and rules test.
type kernelFlags struct {
	enabled  bool
	kmsgPath string
	rules    []string
	lookback time.Duration
}

func (f *kernelFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&f.enabled, "kernel", true, "watch the kernel log with the kernel rules")
	fs.StringVar(&f.kmsgPath, "kmsg-path", "/dev/kmsg", "kernel log device")
	f.addRules(fs)
	fs.DurationVar(&f.lookback, "kernel-lookback", 5*time.Minute, "kernel records older than this at start are skipped")
}

func (f *kernelFlags) addRules(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.rules, "kernel-rules", nil, "kernel rules files in node-problem-detector's system-log-monitor format (repeatable); default: the built-in rules")
}

// ruleSets loads the rules files, or the built-in rules when none is given.
func (f *kernelFlags) ruleSets() ([]*kernellog.RuleSet, error) {
	if len(f.rules) == 0 {
		return []*kernellog.RuleSet{kernellog.DefaultRuleSet()}, nil
	}
	sets := make([]*kernellog.RuleSet, 0, len(f.rules))
	for _, path := range f.rules {
		rs, err := loadRuleSet(path)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

// loadRuleSet loads a rules file and refuses one whose conditions include
// a type the kubelet writes: hangwatch never owns those.
func loadRuleSet(path string) (*kernellog.RuleSet, error) {
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

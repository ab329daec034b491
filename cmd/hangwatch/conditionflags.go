package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// defaultHeartbeat matches the kubelet's nodeStatusReportFrequency.
const defaultHeartbeat = 5 * time.Minute

// conditionFlags shape the condition rules: the config file, then flags
// that override single settings of the built-in rules.
type conditionFlags struct {
	config       string
	raiseAfter   int
	clearAfter   int
	leaseShare   float64
	heartbeat    time.Duration
	overwrite    []string
	changedRaise bool
	changedClear bool
	file         *configFile // the loaded --config, nil without one
	configArg    bool        // the file is config check's FILE argument, not --config
}

// configName is how the user named the config file, for messages.
func (f *conditionFlags) configName() string {
	if f.configArg {
		return "FILE"
	}
	return "--config"
}

func (f *conditionFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "HangwatchConfiguration file ("+configAPIVersion+"); flags given override it")
	fs.IntVar(&f.raiseAfter, "runtime-hung-raise-after", 1, "consecutive hung cycles that make RuntimeHung True")
	fs.IntVar(&f.clearAfter, "runtime-hung-clear-after", 2, "consecutive healthy cycles that make RuntimeHung False again")
	fs.Float64Var(&f.leaseShare, "kubelet-unresponsive-share", 0, "raise KubeletUnresponsive once the Lease has gone unrenewed for this share of the grace period (0 < share < 1); 0: after two missed renewals")
	fs.StringSliceVar(&f.overwrite, "overwrite-shared-conditions", nil, "condition types hangwatch writes even when another field manager (node-problem-detector, say) writes them too; others such are left to that writer, reported once")
	fs.DurationVar(&f.heartbeat, "status-heartbeat-period", defaultHeartbeat, "how often the conditions' lastHeartbeatTime is refreshed while nothing changes; changes are written at once")
}

// validate checks the values; fromFile names the flags the config file set,
// which count as given.
func (f *conditionFlags) validate(fs *pflag.FlagSet, fromFile map[string]string) error {
	given := func(name string) bool { _, ok := fromFile[name]; return ok || fs.Changed(name) }
	f.changedRaise, f.changedClear = given("runtime-hung-raise-after"), given("runtime-hung-clear-after")
	var p problems
	p.check(f.raiseAfter < 1, "--runtime-hung-raise-after", f.raiseAfter, "must be at least 1")
	p.check(f.clearAfter < 1, "--runtime-hung-clear-after", f.clearAfter, "must be at least 1")
	p.check(f.leaseShare < 0 || f.leaseShare >= 1, "--kubelet-unresponsive-share", f.leaseShare, "must be 0 (two missed renewals) or between 0 and 1")
	for _, t := range f.overwrite {
		p.check(!conditions.ValidType(t), "--overwrite-shared-conditions", t, "must be a CamelCase condition type")
	}
	p.check(f.heartbeat < 10*time.Second, "--status-heartbeat-period", f.heartbeat, "must be at least 10s")
	return p.err()
}

// specs returns the built-in rules with the config file and flags applied.
func (f *conditionFlags) specs() []conditions.Spec {
	specs := conditions.DefaultSpecs()
	fromFile := map[string]bool{}
	if f.file != nil {
		specs = conditions.MergeSpecs(specs, f.file.Conditions)
		for _, s := range f.file.Conditions {
			fromFile[s.Type] = true
		}
	}
	for i := range specs {
		if specs[i].Type != conditions.TypeRuntimeHung {
			continue
		}
		if f.changedRaise {
			specs[i].RaiseAfter = f.raiseAfter
		}
		if f.changedClear {
			specs[i].ClearAfter = f.clearAfter
		}
	}
	if f.leaseShare > 0 && !fromFile[conditions.TypeKubeletUnresponsive] { // a rule from the file is the user's own
		specs = conditions.WithLeaseShare(specs, f.leaseShare)
	}
	return specs
}

// withKernelSpecs adds a rule for each condition type the kernel rules
// raise that has none, except those the config file disabled: a
// KernelDeadlock left to node-problem-detector stays unwritten.
func (f *conditionFlags) withKernelSpecs(specs []conditions.Spec, kernelTypes []kernellog.ConditionSpec) []conditions.Spec {
	for _, k := range kernelTypes {
		if conditions.HasSpec(specs, k.Type) || f.disabledInFile(k.Type) {
			continue
		}
		specs = append(specs, conditions.KernelSpec(k.Type))
	}
	return specs
}

func (f *conditionFlags) disabledInFile(condType string) bool {
	if f.file == nil {
		return false
	}
	for _, s := range f.file.Conditions {
		if s.Type == condType && s.Disabled {
			return true
		}
	}
	return false
}

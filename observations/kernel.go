package observations

// Kernel is the `kernel` input: each condition type the kernel rules
// raise, under its type (kernel.KernelDeadlock.active).
type Kernel map[string]KernelCondition

// KernelCondition is one kernel rules' condition as the rules read it.
type KernelCondition struct {
	Active  bool   "cel:\"active\" doc:\"a permanent kernel rule of that condition matched and has not cleared\""
	Reason  string "cel:\"reason\" doc:\"the matching rule's reason, or the condition's default\""
	Message string "cel:\"message\" doc:\"names the rule, its reason and when it matched (never the kernel line); or the condition's default\""
	Matches int64  "cel:\"matches\" doc:\"matches so far\""
}

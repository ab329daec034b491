package conditions

// KernelObservation is a condition as kernel-log rules see it: active while
// a permanent rule's match has not been cleared.
type KernelObservation struct {
	Active  bool
	Reason  string
	Message string
}

// EvaluateKernel is the rule for conditions owned by kernel-log rules
// (KernelDeadlock by default): bad while the rules hold it active. The
// message is the line that raised it, which stays the same while it lasts.
func EvaluateKernel(o KernelObservation) Verdict {
	return Verdict{Bad: o.Active, Reason: o.Reason, Message: o.Message}
}

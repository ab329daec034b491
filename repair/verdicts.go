package repair

import (
	"slices"
	"strings"
	"time"
)

// Verdict is one node condition as the agent holds it.
type Verdict struct {
	Type   string
	True   bool
	Reason string
	// Since is when it last changed status, on the agent's clock.
	Since time.Time
}

// The conditions repair reads, and the reasons that may restart.
const (
	conditionRuntimeHung = "RuntimeHung"
	conditionKubelet     = "KubeletUnresponsive"
	conditionDeadlock    = "KernelDeadlock"
	ReasonKubeletSilent  = "KubeletNotAnswering"
	reasonRuntimeSilent  = "RuntimeNotResponding"
	reasonSuffixHungCall = "Hung"
)

// wholeRuntimeCalls are the CRI calls that name no object: one of them
// hung is the runtime's problem. A per-object call (ContainerStatus of one
// container) that hangs is that container's, and a restart is not its cure.
var wholeRuntimeCalls = []string{"Version", "Status", "ListPodSandbox", "ListContainers", "ImageFsInfo",
	"StreamPodSandboxes", "StreamContainers"}

// WholeRuntimeHang tells whether a RuntimeHung reason is a hang of the
// runtime as a whole. RuntimeUnreachable is not: nothing listens, and
// starting the runtime is systemd's job, not a kill's.
func WholeRuntimeHang(reason string) bool {
	if reason == reasonRuntimeSilent {
		return true
	}
	call, ok := strings.CutSuffix(reason, reasonSuffixHungCall)
	return ok && slices.Contains(wholeRuntimeCalls, call)
}

// unwell finds the verdict that says target is unwell in the way a
// restart cures.
func unwell(t Target, vs []Verdict) (Verdict, bool) {
	for _, v := range vs {
		switch {
		case !v.True:
		case t == TargetRuntime && v.Type == conditionRuntimeHung && WholeRuntimeHang(v.Reason):
			return v, true
		case t == TargetKubelet && v.Type == conditionKubelet && v.Reason == ReasonKubeletSilent:
			return v, true
		}
	}
	return Verdict{}, false
}

// deadlocked tells whether KernelDeadlock is True: a process blocked in
// the kernel cannot be killed, so no restart can complete.
func deadlocked(vs []Verdict) bool {
	return slices.ContainsFunc(vs, func(v Verdict) bool { return v.Type == conditionDeadlock && v.True })
}

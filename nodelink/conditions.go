package nodelink

import (
	"slices"
	"time"
)

// The conditions, and their reasons, the repair process reads.
const (
	ConditionRuntimeHung    = "RuntimeHung"
	ConditionKernelDeadlock = "KernelDeadlock"
	// ReasonRuntimeUnreachable: nothing listens on the runtime's socket;
	// starting the runtime is systemd's job, not a kill's.
	ReasonRuntimeUnreachable = "RuntimeUnreachable"
)

// ReasonFenceDryRun is the Event of a fence the node's dry run did not
// make.
const ReasonFenceDryRun = "FenceDryRun"

// WholeRuntimeCalls are the CRI calls that name no object: one of them
// unanswered is the runtime's problem, and repair times the runtime's
// silence on them. A per-object call (ContainerStatus of one container)
// that hangs is that container's, and a restart is not its cure.
var WholeRuntimeCalls = []string{"Version", "Status", "ListPodSandbox", "ListContainers", "ImageFsInfo",
	"StreamPodSandboxes", "StreamContainers"}

// LifecycleCalls are the CRI calls the kubelet's pod lifecycle needs: its
// relist (the sandbox and container lists, or their streams) and the
// runtime's Status. The fence acts only when every one of them has gone
// without any answer (a stream's message is one): ImageFsInfo hanging
// alone, or a list that answers slowly while Status answers, leaves the
// node's pods running and is never fenced.
var LifecycleCalls = []string{"Status", "ListPodSandbox", "ListContainers", "StreamPodSandboxes", "StreamContainers"}

// Silence is how long a target has given no answer at all, and to what
// (a CRI method, the kubelet's /healthz); 0 while it answers, however
// late.
type Silence func() (what string, d time.Duration)

// Notifier tells the agent an Event for the Node.
type Notifier interface {
	Normal(reason, message string)
	Warning(reason, message string)
}

// RuntimeHung is the RuntimeHung condition when it is True for anything
// but a closed socket: the runtime is unwell in a way a restart may cure.
func RuntimeHung(cs []Condition) (Condition, bool) {
	for _, c := range cs {
		if c.True && c.Type == ConditionRuntimeHung && c.Reason != ReasonRuntimeUnreachable {
			return c, true
		}
	}
	return Condition{}, false
}

// RuntimeUnreachable tells whether RuntimeHung is True because nothing
// listens on the runtime's socket.
func RuntimeUnreachable(cs []Condition) bool {
	return slices.ContainsFunc(cs, func(c Condition) bool {
		return c.True && c.Type == ConditionRuntimeHung && c.Reason == ReasonRuntimeUnreachable
	})
}

// KernelDeadlocked tells whether KernelDeadlock is True: a process blocked
// in the kernel cannot be killed, so no restart or fence can complete.
func KernelDeadlocked(cs []Condition) bool {
	return slices.ContainsFunc(cs, func(c Condition) bool { return c.Type == ConditionKernelDeadlock && c.True })
}

package repair

import (
	"github.com/hangwatch/hangwatch/internal/maintenance"
	"github.com/hangwatch/hangwatch/nodelink"
	"slices"
	"time"
)

// Verdict is one node condition as the agent holds it.
type Verdict struct {
	Type   string
	True   bool
	Reason string
	// Since is when it last changed status, on the agent's clock. Repair
	// does not time from it (a reason it does not act on may have turned
	// it True): it times the target's silence (Options.Unanswered).
	Since time.Time
}

// The conditions repair reads, and the reasons that may restart.
const (
	conditionRuntimeHung = "RuntimeHung"
	conditionKubelet     = "KubeletUnresponsive"
	conditionDeadlock    = "KernelDeadlock"
	ReasonKubeletSilent  = "KubeletNotAnswering"
	// reasonRuntimeUnreachable: nothing listens; starting the runtime is
	// systemd's job, not a kill's.
	reasonRuntimeUnreachable = "RuntimeUnreachable"
)

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

// MaintenanceConditions are the Node conditions that say an administrator
// is at work (KEP-5683, alpha in Kubernetes 1.37): while one is True,
// repair does not act.
var MaintenanceConditions = maintenance.Conditions

// unwell finds the verdict that says target is unwell in a way a restart
// may cure: RuntimeHung True for any call but a closed socket (what is
// timed is the silence of the whole-runtime calls, not the reason), or
// KubeletUnresponsive True because the kubelet does not answer on the
// node.
func unwell(t Target, vs []nodelink.Condition) (nodelink.Condition, bool) {
	for _, v := range vs {
		switch {
		case !v.True:
		case t == TargetRuntime && v.Type == conditionRuntimeHung && v.Reason != reasonRuntimeUnreachable:
			return v, true
		case t == TargetKubelet && v.Type == conditionKubelet && v.Reason == ReasonKubeletSilent:
			return v, true
		}
	}
	return nodelink.Condition{}, false
}

// unreachable tells whether RuntimeHung is True because nothing listens
// on the runtime's socket.
func unreachable(vs []nodelink.Condition) bool {
	return slices.ContainsFunc(vs, func(v nodelink.Condition) bool {
		return v.True && v.Type == conditionRuntimeHung && v.Reason == reasonRuntimeUnreachable
	})
}

// deadlocked tells whether KernelDeadlock is True: a process blocked in
// the kernel cannot be killed, so no restart can complete.
func deadlocked(vs []nodelink.Condition) bool {
	return slices.ContainsFunc(vs, func(v nodelink.Condition) bool { return v.Type == conditionDeadlock && v.True })
}

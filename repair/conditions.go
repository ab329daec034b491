package repair

import (
	"github.com/hangwatch/hangwatch/internal/maintenance"
	"github.com/hangwatch/hangwatch/nodelink"
)

// The condition, and its reason, that may restart the kubelet.
const (
	conditionKubelet    = "KubeletUnresponsive"
	ReasonKubeletSilent = "KubeletNotAnswering"
)

// MaintenanceConditions are the Node conditions that say an administrator
// is at work (KEP-5683, alpha in Kubernetes 1.37): while one is True,
// repair does not act.
var MaintenanceConditions = maintenance.Conditions

// unwell finds the condition that says target is unwell in a way a restart
// may cure: RuntimeHung True for any call but a closed socket (what is
// timed is the silence of the whole-runtime calls, not the reason), or
// KubeletUnresponsive True because the kubelet does not answer on the
// node.
func unwell(t Target, vs []nodelink.Condition) (nodelink.Condition, bool) {
	if t == TargetRuntime {
		return nodelink.RuntimeHung(vs)
	}
	for _, v := range vs {
		if v.True && t == TargetKubelet && v.Type == conditionKubelet && v.Reason == ReasonKubeletSilent {
			return v, true
		}
	}
	return nodelink.Condition{}, false
}

package integration

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestStaticPodBeatsNotReady runs hangwatch as the shipped static pod on a
// real kubelet and measures, for a hung-task kernel line and for a frozen
// runtime (containerd, or CRI-O with HANGWATCH_E2E_RUNTIME=crio), the
// time from the fault to hangwatch's condition on the
// Node, and for the freeze the time to the kubelet's Ready=False and the
// lead between them.
func TestStaticPodBeatsNotReady(t *testing.T) {
	harness.Parallel(t, harness.LaneKmsg)
	n := hangwatch.StartStaticPodNode(t)
	n.WaitHealthy(t)

	t.Run("kernel line", func(t *testing.T) {
		line := fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", 1000000+rand.Intn(8000000))
		written := time.Now()
		writeKmsg(t, line)
		at := n.WaitNodeCond(t, 30*time.Second, "KernelDeadlock", hangwatch.CondIs(corev1.ConditionTrue, ""))
		harness.Measure(t, "e2e_kernel_deadlock_on_node_after_kmsg_line", at.Sub(written))
		if at.Sub(written) > 5*time.Second { // goal; measured 0.2-0.4s, the bound leaves room for a busy machine
			t.Logf("KernelDeadlock on the Node %v after the line: over the 5s goal", at.Sub(written))
		}
		if at.Sub(written) > 15*time.Second {
			t.Errorf("KernelDeadlock on the Node %v after the line", at.Sub(written))
		}
	})

	t.Run("runtime frozen", func(t *testing.T) {
		thaw := harness.Freeze(t, n.C)
		frozen := time.Now()
		hung := n.WaitNodeCond(t, time.Minute, "RuntimeHung", hangwatch.CondIs(corev1.ConditionTrue, ""))
		harness.Measure(t, "e2e_runtime_hung_on_node_after_freeze", hung.Sub(frozen))
		if hung.Sub(frozen) > 5*time.Second { // goal; a heartbeat period (2.5s) + the timeout (2s), measured 3.4-4.1s
			t.Logf("RuntimeHung on the Node %v after the freeze: over the 5s goal", hung.Sub(frozen))
		}
		if hung.Sub(frozen) > 40*time.Second {
			t.Errorf("RuntimeHung on the Node %v after the freeze", hung.Sub(frozen))
		}
		notReady := n.WaitNodeCond(t, 5*time.Minute, "Ready", hangwatch.CondIs(corev1.ConditionFalse, ""))
		harness.Measure(t, "e2e_kubelet_ready_false_after_freeze", notReady.Sub(frozen))
		harness.Measure(t, "e2e_lead_runtime_hung_before_not_ready", notReady.Sub(hung))
		if r := hangwatch.NodeCond(t, n.CP, n.K.Node, "Ready"); r != nil {
			t.Logf("kubelet: Ready=%s %s: %s", r.Status, r.Reason, r.Message)
		}
		thaw()
		n.WaitNodeCond(t, 2*time.Minute, "RuntimeHung", hangwatch.CondIs(corev1.ConditionFalse, "RuntimeResponsive"))
	})
}

// The PLEG-path scenarios hold one kind of CRI call of the kubelet's
// (through the fault proxy) while hangwatch, talking to containerd
// directly, sees the stall in the kubelet's kubelet_pleg_last_seen_seconds.
// Each measures PLEGUnhealthy on the Node against the kubelet's Ready=False.

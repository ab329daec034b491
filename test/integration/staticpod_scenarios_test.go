package integration

import (
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/criproxy"
)

// TestStaticPodBeatsNotReady runs hangwatch as the shipped static pod on a
// real kubelet and measures, for a hung-task kernel line and for a frozen
// containerd, the time from the fault to hangwatch's condition on the
// Node, and for the freeze the time to the kubelet's Ready=False and the
// lead between them.
func TestStaticPodBeatsNotReady(t *testing.T) {
	n := startStaticPodNode(t)
	started := time.Now()
	n.waitNodeCond(t, 2*time.Minute, "RuntimeHung", condIs(corev1.ConditionFalse, "RuntimeResponsive"))
	n.waitNodeCond(t, 30*time.Second, "KernelDeadlock", condIs(corev1.ConditionFalse, ""))
	n.waitNodeCond(t, 30*time.Second, "KubeletUnresponsive", condIs(corev1.ConditionFalse, ""))
	n.waitNodeCond(t, 30*time.Second, "PLEGUnhealthy", condIs(corev1.ConditionFalse, ""))
	t.Logf("static pod hangwatch wrote its conditions False %v after the manifest", time.Since(started).Round(time.Millisecond))
	for _, e := range nodeEvents(t, n.cp, n.k.Node) {
		if e.Source.Component == "hangwatch" && e.Type == corev1.EventTypeWarning {
			t.Errorf("a healthy node starting got a Warning from hangwatch: %s %s", e.Reason, e.Message)
		}
	}

	t.Run("kernel line", func(t *testing.T) {
		line := fmt.Sprintf("INFO: task containerd:%d blocked for more than 120 seconds.", 1000000+rand.Intn(8000000))
		written := time.Now()
		writeKmsg(t, line)
		at := n.waitNodeCond(t, 30*time.Second, "KernelDeadlock", condIs(corev1.ConditionTrue, ""))
		measure(t, "e2e_kernel_deadlock_on_node_after_kmsg_line", at.Sub(written))
		if at.Sub(written) > 5*time.Second {
			t.Errorf("KernelDeadlock on the Node %v after the line; goal: within 5s", at.Sub(written))
		}
	})

	t.Run("containerd frozen", func(t *testing.T) {
		thaw := freeze(t, n.c)
		frozen := time.Now()
		hung := n.waitNodeCond(t, time.Minute, "RuntimeHung", condIs(corev1.ConditionTrue, ""))
		measure(t, "e2e_runtime_hung_on_node_after_freeze", hung.Sub(frozen))
		if hung.Sub(frozen) > 15*time.Second {
			t.Errorf("RuntimeHung on the Node %v after the freeze; goal: within 15s", hung.Sub(frozen))
		}
		notReady := n.waitNodeCond(t, 5*time.Minute, "Ready", condIs(corev1.ConditionFalse, ""))
		measure(t, "e2e_kubelet_ready_false_after_freeze", notReady.Sub(frozen))
		measure(t, "e2e_lead_runtime_hung_before_not_ready", notReady.Sub(hung))
		if r := nodeCond(t, n.cp, n.k.Node, "Ready"); r != nil {
			t.Logf("kubelet: Ready=%s %s: %s", r.Status, r.Reason, r.Message)
		}
		thaw()
		n.waitNodeCond(t, 2*time.Minute, "RuntimeHung", condIs(corev1.ConditionFalse, "RuntimeResponsive"))
	})
}

// longScenarios says whether the scenarios that wait minutes for the
// kubelet's PLEG verdict run: from the benchmark command, not in CI.
func longScenarios(t *testing.T) {
	t.Helper()
	if os.Getenv("HANGWATCH_E2E_LONG") == "" {
		t.Skip("a PLEG-path scenario waits 3+ minutes for the kubelet; hack/bench.sh runs it (HANGWATCH_E2E_LONG=1)")
	}
}

// TestStaticPodListPodSandboxHang holds only the kubelet's ListPodSandbox
// (through the fault proxy); hangwatch, talking to containerd directly,
// sees the PLEG stall in the kubelet's kubelet_pleg_last_seen_seconds.
func TestStaticPodListPodSandboxHang(t *testing.T) {
	longScenarios(t)
	n := startStaticPodNode(t)
	n.waitNodeCond(t, 2*time.Minute, "PLEGUnhealthy", condIs(corev1.ConditionFalse, ""))
	release := n.proxy.Inject(criproxy.Fault{Method: "ListPodSandbox"})
	defer release()
	fault := time.Now()
	flagged := n.waitNodeCond(t, 3*time.Minute, "PLEGUnhealthy", condIs(corev1.ConditionTrue, ""))
	measure(t, "e2e_pleg_unhealthy_after_list_pod_sandbox_hang", flagged.Sub(fault))
	notReady := n.waitNodeCond(t, 6*time.Minute, "Ready", condIs(corev1.ConditionFalse, ""))
	measure(t, "e2e_kubelet_ready_false_after_list_pod_sandbox_hang", notReady.Sub(fault))
	measure(t, "e2e_lead_pleg_unhealthy_before_not_ready", notReady.Sub(flagged))
	if r := nodeCond(t, n.cp, n.k.Node, "Ready"); r != nil {
		t.Logf("kubelet: Ready=%s %s: %s", r.Status, r.Reason, r.Message)
	}
	if lead := notReady.Sub(flagged); lead < 150*time.Second {
		t.Logf("lead %v is under the 150s goal", lead)
	}
	release()
	n.waitNodeCond(t, 3*time.Minute, "PLEGUnhealthy", condIs(corev1.ConditionFalse, ""))
}

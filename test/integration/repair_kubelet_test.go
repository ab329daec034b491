package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestRepairRestartsAFrozenKubeletUnderSystemd freezes a real kubelet run
// by a real systemd with kubeadm's unit (Restart=always, RestartSec=10),
// beside containerd and a kube-controller-manager whose node lifecycle
// controller marks a node Unknown 50 s after its last Lease renewal.
// hangwatch, with the shipped restartKubeletAfter (10 s), sees the local
// /healthz stop answering (KubeletNotAnswering), has systemd kill and
// start the kubelet, and the Lease is renewed again before the node goes
// Unknown.
func TestRepairRestartsAFrozenKubeletUnderSystemd(t *testing.T) {
	harness.Parallel(t)
	systemd.Require(t)
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp) // the node lifecycle controller: Unknown 50 s after the last renewal
	c, sd := containerd.StartUnderSystemdT(t, 0, 0)
	node := hangwatch.UniqueNode("hw-kubelet-repair")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := kubelet.StartUnderSystemd(ctx, cp, c, node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	kc, err := cp.NodeKubeconfig(node)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nkubelet:\n  healthzURL: http://127.0.0.1:%d/healthz\n"+
		"repair:\n  enabled: true\n  systemdSocket: %s\n", k.HealthzPort, sd.Socket())
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	d := hangwatch.StartRepairing(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--config", config)...)
	started := time.Now()
	harness.Eventually(t, time.Minute, "KubeletUnresponsive False", func() bool { st, _, _ := d.Condition(t, "KubeletUnresponsive"); return st == "False" })
	readyBefore := hangwatch.NodeReady(t, cp, node)
	// a kubelet under 3 waits old (30 s) is not restarted: it may be one
	// an operator has just started
	harness.Eventually(t, time.Minute, "the kubelet to be nearly 3 waits old", func() bool {
		return time.Since(started) > 3*repair.DefaultRestartKubeletAfter-repair.DefaultRestartKubeletAfter
	})

	renewed0 := leaseRenewTime(t, cp, node)
	pid0 := k.PID()
	if err := k.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	t.Cleanup(func() { _ = k.Thaw() })
	harness.Eventually(t, 30*time.Second, "KubeletUnresponsive True (KubeletNotAnswering)", func() bool {
		st, reason, _ := d.Condition(t, "KubeletUnresponsive")
		return st == "True" && reason == repair.ReasonKubeletSilent
	})
	harness.Measure(t, "repair_kubelet_unresponsive_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "systemd to start a new kubelet", func() bool { pid := k.PID(); return pid != 0 && pid != pid0 })
	harness.Measure(t, "repair_kubelet_restarted_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "the Lease renewed by the new kubelet", func() bool { return leaseRenewTime(t, cp, node).After(renewed0) })
	harness.Measure(t, "repair_kubelet_lease_renewed_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "KubeletUnresponsive False", func() bool { st, _, _ := d.Condition(t, "KubeletUnresponsive"); return st == "False" })
	harness.Measure(t, "repair_kubelet_unresponsive_false_after_freeze", time.Since(frozen))

	if after := hangwatch.NodeReady(t, cp, node); after.Status != corev1.ConditionTrue || !after.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("the node's Ready moved during the freeze: %s since %v (was %s since %v)", after.Status, after.LastTransitionTime,
			readyBefore.Status, readyBefore.LastTransitionTime)
	}
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if got := harness.MetricValue(text, `hangwatch_repairs_total{outcome="restarted",target="kubelet"}`); got != 1 {
		t.Errorf("kubelet restarts = %v, want 1", got)
	}
	harness.Eventually(t, 30*time.Second, "a KubeletRestarted Event", func() bool {
		return harness.HasEvent(harness.NodeEvents(t, cp, node), corev1.EventTypeNormal, "KubeletRestarted")
	})
}

func leaseRenewTime(t *testing.T, cp *harness.ControlPlane, node string) time.Time {
	t.Helper()
	l, err := cp.Admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

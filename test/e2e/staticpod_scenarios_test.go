package e2e

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// The PLEG-path scenarios hold one kind of CRI call of the kubelet's
// (through the fault proxy) while hangwatch, talking to containerd
// directly, sees the stall in the kubelet's kubelet_pleg_last_seen_seconds.
// Each measures PLEGUnhealthy on the Node against the kubelet's Ready=False.

func TestStaticPodListPodSandboxHang(t *testing.T) {
	plegPathScenario(t, "list_pod_sandbox", func(n hangwatch.StaticPodNode) func() {
		// A kubelet with CRIListStreaming lists with the stream: hold both.
		unary := n.Proxy.Inject(criproxy.Fault{Method: "ListPodSandbox"})
		stream := n.Proxy.Inject(criproxy.Fault{Method: "StreamPodSandboxes"})
		return func() { unary(); stream() }
	})
}

// TestStaticPodContainerStatusHang holds ContainerStatus of one container;
// the kubelet asks for it once that container changes (it is stopped).
func TestStaticPodContainerStatusHang(t *testing.T) {
	plegPathScenario(t, "container_status", func(n hangwatch.StaticPodNode) func() {
		_, container := n.Victim(t)
		release := n.Proxy.Inject(criproxy.Fault{Method: "ContainerStatus", ID: container})
		n.StopContainer(t, container)
		return release
	})
}

// TestStaticPodPodSandboxStatusHang holds PodSandboxStatus of one sandbox;
// the kubelet asks for it once its pod changes (its container is stopped).
func TestStaticPodPodSandboxStatusHang(t *testing.T) {
	plegPathScenario(t, "pod_sandbox_status", func(n hangwatch.StaticPodNode) func() {
		sandbox, container := n.Victim(t)
		release := n.Proxy.Inject(criproxy.Fault{Method: "PodSandboxStatus", ID: sandbox})
		n.StopContainer(t, container)
		return release
	})
}

func plegPathScenario(t *testing.T, name string, fault func(hangwatch.StaticPodNode) (release func())) {
	n := hangwatch.StartStaticPodNode(t)
	n.WaitHealthy(t)
	n.SkipWhenPLEGGaugeUntrusted(t)
	start := time.Now()
	release := fault(n)
	defer release()
	flagged := n.WaitNodeCond(t, 4*time.Minute, "PLEGUnhealthy", hangwatch.CondIs(corev1.ConditionTrue, ""))
	harness.Measure(t, "e2e_pleg_unhealthy_after_"+name+"_hang", flagged.Sub(start))
	_, notReady, err := hangwatch.PollNode(t, n.CP, 5*time.Minute, n.K.Node, "Ready", hangwatch.CondIs(corev1.ConditionFalse, ""), harness.Every(100*time.Millisecond))
	if r := hangwatch.NodeCond(t, n.CP, n.K.Node, "Ready"); r != nil {
		t.Logf("kubelet: Ready=%s %s: %s", r.Status, r.Reason, r.Message)
	}
	if c := hangwatch.NodeCond(t, n.CP, n.K.Node, "PLEGUnhealthy"); c != nil {
		t.Logf("hangwatch: PLEGUnhealthy=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	rises := 0
	for _, e := range harness.NodeEvents(t, n.CP, n.K.Node) {
		if e.Source.Component == "hangwatch" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "PLEG") {
			rises += int(e.Count)
		}
	}
	measurements.Record(t, "e2e_pleg_unhealthy_warnings_"+name, float64(rises), "events")
	if err != nil {
		// The kubelet's own call times out after 2m (--runtime-request-
		// timeout), its relist then completes and the 3m PLEG threshold is
		// never passed, while pods on the node get no status for 2m at a time.
		measurements.Record(t, "e2e_kubelet_still_ready_after_"+name+"_hang_seconds", math.Round(time.Since(start).Seconds()), "s")
		release()
		return
	}
	harness.Measure(t, "e2e_kubelet_ready_false_after_"+name+"_hang", notReady.Sub(start))
	harness.Measure(t, "e2e_lead_pleg_unhealthy_before_not_ready_"+name, notReady.Sub(flagged))
	if lead := notReady.Sub(flagged); lead < 150*time.Second {
		t.Logf("lead %v is under the 150s goal", lead.Round(time.Second))
	}
	release()
	n.WaitNodeCond(t, 4*time.Minute, "PLEGUnhealthy", hangwatch.CondIs(corev1.ConditionFalse, ""))
}

// TestStaticPodKubeletFrozen stops the kubelet with SIGSTOP: its Lease is
// no longer renewed; hangwatch raises KubeletUnresponsive and the node
// lifecycle controller marks the node Unknown after its grace period.
func TestStaticPodKubeletFrozen(t *testing.T) {
	n := hangwatch.StartStaticPodNode(t)
	n.WaitHealthy(t)
	if err := n.K.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer func() { _ = n.K.Thaw() }()
	flagged := n.WaitNodeCond(t, 2*time.Minute, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionTrue, ""))
	harness.Measure(t, "e2e_kubelet_unresponsive_after_kubelet_freeze", flagged.Sub(frozen))
	unknown := n.WaitNodeCond(t, 3*time.Minute, "Ready", hangwatch.CondIs(corev1.ConditionUnknown, ""))
	harness.Measure(t, "e2e_node_unknown_after_kubelet_freeze", unknown.Sub(frozen))
	harness.Measure(t, "e2e_lead_kubelet_unresponsive_before_unknown", unknown.Sub(flagged))
	if lead := unknown.Sub(flagged); lead < 20*time.Second {
		t.Errorf("KubeletUnresponsive only %v before Unknown; goal: at least 20s", lead)
	}
	if err := n.K.Thaw(); err != nil {
		t.Fatal(err)
	}
	n.WaitNodeCond(t, 2*time.Minute, "KubeletUnresponsive", hangwatch.CondIs(corev1.ConditionFalse, ""))
}

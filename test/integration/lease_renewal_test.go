package integration

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// noKubeletProbe is for a node with no kubelet, only its Lease renewals:
// no health probe, so the Lease is read every --lease-period (a health
// port that refuses is read every idle period instead, issue 37).
const noKubeletProbe = "--kubelet-healthz-url="

func TestLeaseNotRenewedRaisesKubeletUnresponsiveBeforeTheGrace(t *testing.T) {
	harness.Parallel(t)
	c, cp := hangwatch.OwnContainerd(t), hangwatch.SharedControlPlane(t)
	const renewEvery, grace = 10 * time.Second, 50 * time.Second // the kubelet's and controller's defaults
	node := hangwatch.UniqueNode("hw-lease")
	kc := hangwatch.CreateNode(t, cp, node)
	stop := make(chan struct{})
	lastRenew := hangwatch.RenewLease(t, harness.ClientFor(t, kc), node, renewEvery, stop)
	d := hangwatch.StartDaemon(t, c.Endpoint, hangwatch.NodeArgs(kc, node, "--lease-period", "1s", noKubeletProbe)...)
	hangwatch.WaitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", hangwatch.CondStatus(corev1.ConditionFalse))
	watched := time.Now()
	harness.Eventually(t, 2*renewEvery, "a renewal while watched", func() bool { return lastRenew().After(watched) }, harness.UnlessExited(d))
	if c := hangwatch.NodeCond(t, cp, node, "KubeletUnresponsive"); c.Status != corev1.ConditionFalse {
		t.Fatalf("KubeletUnresponsive %s while the Lease is renewed", c.Status)
	}

	checkDiagLease(t, c.Endpoint, kc, node)

	close(stop)
	stoppedAfter := lastRenew()
	raised := hangwatch.WaitNode(t, cp, d, grace, node, "KubeletUnresponsive", hangwatch.CondStatus(corev1.ConditionTrue))
	age := time.Since(stoppedAfter)
	harness.Measure(t, "kubelet_unresponsive_after_last_renewal", age)
	harness.Measure(t, "kubelet_unresponsive_lead_before_grace", grace-age)
	if age < 2*renewEvery || age > grace-20*time.Second {
		t.Errorf("raised %v after the last renewal, want after two missed renewals (%v) and at least 20s before the %v grace",
			age, 2*renewEvery, grace)
	}
	if raised.Reason != "NodeLeaseNotRenewed" {
		t.Errorf("reason %s", raised.Reason)
	}
	text, err := d.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := harness.MetricValue(text, "hangwatch_lease_renew_age_seconds"); v < 2*renewEvery.Seconds() {
		t.Errorf("hangwatch_lease_renew_age_seconds = %v", v)
	}
}

// checkDiagLease runs diag with the node's credentials: the Lease section
// shows the renew interval and the grace the API server's version implies.
func checkDiagLease(t *testing.T, endpoint, kubeconfig, node string) {
	t.Helper()
	out, stderr, code, err := harness.Run(hangwatch.HangwatchBin, "diag", "-r", endpoint, "--kernel=false", "--kubeconfig", kubeconfig,
		"--node-name", node, "-o", "json")
	if err != nil || code != 0 {
		t.Fatalf("diag: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	var r struct {
		Lease struct {
			Found                bool    `json:"found"`
			RenewAgeSeconds      float64 `json:"renewAgeSeconds"`
			RenewIntervalSeconds float64 `json:"renewIntervalSeconds"`
			GraceSeconds         float64 `json:"graceSeconds"`
			SecondsLeft          float64 `json:"secondsLeft"`
		} `json:"lease"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("diag -o json: %v\n%s", err, out)
	}
	l := r.Lease
	if !l.Found || l.RenewIntervalSeconds != 10 || l.GraceSeconds != 50 || l.RenewAgeSeconds > 11 || l.SecondsLeft < 39 {
		t.Errorf("diag lease section %+v", l)
	}
}

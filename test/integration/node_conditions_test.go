package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/conditions"
)

func TestNodeIdentityMayWriteOnlyItsOwnNode(t *testing.T) {
	cp := controlPlane(t)
	self, other := uniqueNode("hw-self"), uniqueNode("hw-other")
	kc := createNode(t, cp, self)
	createNode(t, cp, other)
	client := harness.ClientFor(t, kc)
	body, err := conditions.StatusPatch([]corev1.NodeCondition{{Type: "RuntimeHung", Status: corev1.ConditionFalse, Reason: "RuntimeResponsive"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Patch(ctx, self, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patching its own node: %v", err)
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, other, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is not allowed to modify node "`+other+`"`) {
		t.Fatalf("patching another node: %v, want Forbidden by NodeRestriction", err)
	}
	if c := nodeCond(t, cp, other, "RuntimeHung"); c != nil {
		t.Fatalf("the other node got %+v", c)
	}
}

func TestRestartCarriesOnTheNodesConditions(t *testing.T) {
	c, cp := sharedContainerd(t), controlPlane(t)
	node := uniqueNode("hw-restart")
	kc := createNode(t, cp, node)
	args := nodeArgs(kc, node, "--config", noLeaseConfig(t), "--period", "1s", "-t", "1s", "--max-period", "2s")
	first := startDaemon(t, c.Endpoint, args...)
	waitNode(t, cp, first, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))
	thaw := freeze(t, c)
	raised := waitNode(t, cp, first, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionTrue))
	first.stop(t)
	thaw()

	// The runtime answers again, but one good cycle is not enough to clear
	// (--runtime-hung-clear-after 4): the restarted hangwatch must carry on
	// True, with the same transition time, before it clears.
	second := startDaemon(t, c.Endpoint, append(args, "--runtime-hung-clear-after", "4")...)
	harness.Eventually(t, 30*time.Second, "the restarted hangwatch's first status write", func() bool {
		text, err := second.get("/metrics")
		return err == nil && metricValue(text, `hangwatch_node_status_patches_total{result="success"}`) >= 1
	}, harness.UnlessExited(second))
	refreshed := nodeCond(t, cp, node, "RuntimeHung")
	if refreshed == nil || refreshed.Status != corev1.ConditionTrue || !refreshed.LastTransitionTime.Equal(&raised.LastTransitionTime) {
		t.Fatalf("after the restart the Node shows %+v, want True since %v", refreshed, raised.LastTransitionTime)
	}
	waitNode(t, cp, second, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))
}

func TestAPIServerRestartFlushesTheLatestState(t *testing.T) {
	c, cp := sharedContainerd(t), controlPlane(t)
	node := uniqueNode("hw-apidown")
	kc := createNode(t, cp, node)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--config", noLeaseConfig(t), "--period", "1s", "-t", "1s", "--max-period", "2s")...)
	waitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionFalse))

	cp.StopAPIServer()
	thaw := freeze(t, c)
	harness.Eventually(t, 30*time.Second, "RuntimeHung True in /conditions", func() bool { return d.runtimeHung(t) == "True" }, harness.UnlessExited(d))
	defer thaw() // stays frozen until the end: the state to flush is True
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	back := time.Now()
	waitNode(t, cp, d, 30*time.Second, node, "RuntimeHung", status(corev1.ConditionTrue))
	measure(t, "node_flushed_after_apiserver_return", time.Since(back))
	if took := time.Since(back); took > 10*time.Second {
		t.Errorf("the state reached the Node %v after the API server returned, want within the 8s retry cap", took)
	}
	if !d.running() {
		t.Fatalf("%v exited while the API server was down", d)
	}
}

// renewLease renews the node Lease as the kubelet would until stop closes.
func renewLease(t *testing.T, client kubernetes.Interface, node string, every time.Duration, stop <-chan struct{}) (lastRenew func() time.Time) {
	t.Helper()
	ctx := context.Background()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To(int32(4 * every / time.Second)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Lease as the node: %v", err)
	}
	last := make(chan time.Time, 1)
	last <- lease.Spec.RenewTime.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if l, err := client.CoordinationV1().Leases("kube-node-lease").Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
				lease = l
				<-last
				last <- l.Spec.RenewTime.Time
			}
		}
	}()
	// Once stop is closed, the last renewal is read only after the loop has
	// ended, so an Update in flight at the stop is counted.
	return func() time.Time {
		select {
		case <-stop:
			<-done
		default:
		}
		v := <-last
		last <- v
		return v
	}
}

func TestLeaseNotRenewedRaisesKubeletUnresponsiveBeforeTheGrace(t *testing.T) {
	c, cp := sharedContainerd(t), controlPlane(t)
	const renewEvery, grace = 10 * time.Second, 50 * time.Second // the kubelet's and controller's defaults
	node := uniqueNode("hw-lease")
	kc := createNode(t, cp, node)
	stop := make(chan struct{})
	lastRenew := renewLease(t, harness.ClientFor(t, kc), node, renewEvery, stop)
	d := startDaemon(t, c.Endpoint, nodeArgs(kc, node, "--lease-period", "1s")...)
	waitNode(t, cp, d, 30*time.Second, node, "KubeletUnresponsive", status(corev1.ConditionFalse))
	watched := time.Now()
	harness.Eventually(t, 2*renewEvery, "a renewal while watched", func() bool { return lastRenew().After(watched) }, harness.UnlessExited(d))
	if c := nodeCond(t, cp, node, "KubeletUnresponsive"); c.Status != corev1.ConditionFalse {
		t.Fatalf("KubeletUnresponsive %s while the Lease is renewed", c.Status)
	}

	checkDiagLease(t, c.Endpoint, kc, node)

	close(stop)
	stoppedAfter := lastRenew()
	raised := waitNode(t, cp, d, grace, node, "KubeletUnresponsive", status(corev1.ConditionTrue))
	age := time.Since(stoppedAfter)
	measure(t, "kubelet_unresponsive_after_last_renewal", age)
	measure(t, "kubelet_unresponsive_lead_before_grace", grace-age)
	if age < 2*renewEvery || age > grace-20*time.Second {
		t.Errorf("raised %v after the last renewal, want after two missed renewals (%v) and at least 20s before the %v grace",
			age, 2*renewEvery, grace)
	}
	if raised.Reason != "NodeLeaseNotRenewed" {
		t.Errorf("reason %s", raised.Reason)
	}
	text, err := d.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := metricValue(text, "hangwatch_lease_renew_age_seconds"); v < 2*renewEvery.Seconds() {
		t.Errorf("hangwatch_lease_renew_age_seconds = %v", v)
	}
}

// checkDiagLease runs diag with the node's credentials: the Lease section
// shows the renew interval and the grace the API server's version implies.
func checkDiagLease(t *testing.T, endpoint, kubeconfig, node string) {
	t.Helper()
	out, err := exec.Command(hangwatchBin, "diag", "-r", endpoint, "--kernel=false", "--kubeconfig", kubeconfig,
		"--node-name", node, "-o", "json").Output()
	if err != nil {
		t.Fatalf("diag: %v\n%s", err, out)
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
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("diag -o json: %v\n%s", err, out)
	}
	l := r.Lease
	if !l.Found || l.RenewIntervalSeconds != 10 || l.GraceSeconds != 50 || l.RenewAgeSeconds > 11 || l.SecondsLeft < 39 {
		t.Errorf("diag lease section %+v", l)
	}
}

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestAdmissionPolicyLetsTheServiceAccountWriteOnlyItsConditions applies
// the DaemonSet overlay for real and checks, with a token bound to a
// hangwatch pod on the node, that on its own Node the ServiceAccount may
// change its own condition types and nothing else: not Ready, not another
// component's condition, not a label, an annotation or an address.
func TestAdmissionPolicyLetsTheServiceAccountWriteOnlyItsConditions(t *testing.T) {
	cp, ctx, nodes := admissionSetup(t, nil, "vap-fields")
	node := nodes[0]
	// A foreign condition and an address, as node-problem-detector and the
	// kubelet would have written them.
	adminPatch(ctx, t, cp.Admin, node, `{"status":{"addresses":[{"type":"InternalIP","address":"10.1.2.3"}],`+
		`"conditions":[{"type":"FrequentKubeletRestart","status":"False","reason":"NoFrequentKubeletRestart","message":"kubelet is functioning properly"}]}}`)
	client := cp.TokenClient(t, cp.Token(t, "kube-system", "hangwatch", hangwatchPodOn(ctx, t, cp, node)))

	// Until the API server has loaded the policy this patch is admitted:
	// it only moves Ready's heartbeat, a second further each time.
	heartbeat := func(i int) string {
		return `{"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"` +
			time.Now().UTC().Add(time.Duration(i)*time.Second).Format(time.RFC3339) + `"}]}}`
	}
	waitPolicyDenies(ctx, t, client, node, heartbeat, "only its own condition types")
	ready := `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"hangwatch says so"}]}}`
	cases := []struct {
		name, patch, want string
	}{
		{"Ready", ready, "not Ready"},
		{"a foreign condition", `{"status":{"conditions":[{"type":"FrequentKubeletRestart","status":"True","reason":"FrequentKubeletRestart","message":"x"}]}}`, "not FrequentKubeletRestart"},
		{"removing a foreign condition", `{"status":{"conditions":[{"type":"FrequentKubeletRestart","$patch":"delete"}]}}`, "not remove FrequentKubeletRestart"},
		{"a label", `{"metadata":{"labels":{"hangwatch.io/owned":"yes"}}}`, "metadata.labels"},
		{"an annotation", `{"metadata":{"annotations":{"hangwatch.io/note":"x"}}}`, "metadata.annotations"},
		{"an address", `{"status":{"addresses":[{"type":"InternalIP","address":"10.9.9.9"}]}}`, "status.addresses"},
		{"capacity", `{"status":{"capacity":{"pods":"1000"}}}`, "status.capacity"},
	}
	for _, c := range cases {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(c.patch), metav1.PatchOptions{}, "status")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want the policy's denial naming %q", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["hangwatch.io/owned"] != "" || n.Annotations["hangwatch.io/note"] != "" || n.Status.Addresses[0].Address != "10.1.2.3" {
		t.Errorf("a denied change landed: labels %v, annotations %v, addresses %v", n.Labels, n.Annotations, n.Status.Addresses)
	}
	if c := hangwatch.NodeCond(t, cp, node, "Ready"); c == nil || c.Status != "True" {
		t.Errorf("Ready after the denied patch: %+v", c)
	}
	// hangwatch's own patch, and its own condition raised, are admitted.
	if err := patchCondition(ctx, client, node); err != nil {
		t.Fatalf("hangwatch's own status patch: %v", err)
	}
	own := `{"status":{"conditions":[{"type":"KernelDeadlock","status":"True","reason":"ContainerRuntimeTaskBlocked","message":"task containerd blocked"}]}}`
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(own), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("raising KernelDeadlock: %v", err)
	}
	if c := hangwatch.NodeCond(t, cp, node, "KernelDeadlock"); c == nil || c.Status != "True" {
		t.Errorf("KernelDeadlock after hangwatch's patch: %+v", c)
	}
}

func adminPatch(ctx context.Context, t *testing.T, admin kubernetes.Interface, node, patch string) {
	t.Helper()
	if _, err := admin.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

// waitPolicyDenies sends patch(i), i = 0, 1, ..., until the policy (loaded
// by the API server a moment after it is applied) denies it with want.
func waitPolicyDenies(ctx context.Context, t *testing.T, c kubernetes.Interface, node string, patch func(int) string, want string) {
	t.Helper()
	var err error
	i := 0
	harness.Eventually(t, time.Minute, "the policy to deny "+patch(0), func() bool {
		_, err = c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch(i)), metav1.PatchOptions{}, "status")
		i++ // a new patch each time
		return err != nil && strings.Contains(err.Error(), want)
	}, harness.Every(200*time.Millisecond), harness.Explaining(func() string { return fmt.Sprintf("last answer %v", err) }))
}

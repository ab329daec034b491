package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
)

// TestAdmissionPolicyFreezesTheNodeItself applies the DaemonSet overlay and
// the fence's RBAC (which grants patch nodes) for real: with a token bound
// to a hangwatch pod on the node, the ServiceAccount may write the fence's
// attestation on its own Node and nothing else of it. An owner reference
// (to an absent object the garbage collector would delete the Node, and
// pod GC then force-delete its pods), a finalizer, providerID, podCIDR(s),
// unschedulable and taints are each refused with the field named, and none
// of them lands.
func TestAdmissionPolicyFreezesTheNodeItself(t *testing.T) {
	cp, ctx, nodes := admissionSetup(t, []string{"overlays/fence/rbac-fence.yaml"}, "itself-own", "itself-other")
	own, other := nodes[0], nodes[1]
	client := cp.TokenClient(t, cp.NodeBoundToken(t, "kube-system", "hangwatch", own))
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", Pods: []string{"0a-1"}, At: time.Now(), Outcome: fencing.OutcomeFenced}.Annotations()
	var err error
	// the policy takes effect once the API server has loaded it
	_, _ = harness.Poll(ctx, time.Minute, "the policy to deny another Node's attestation", func() bool {
		err = annotateAs(ctx, client, other, att)
		return err != nil && strings.Contains(err.Error(), "may write only its own Node")
	}, harness.Every(200*time.Millisecond))
	patch := func(body string) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	for _, c := range []struct{ name, patch, want string }{
		{"an owner reference", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"5f0c2a0e-0000-4000-8000-000000000001"}]}}`, "metadata.ownerReferences"},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/hold"]}}`, "metadata.finalizers"},
		{"providerID", `{"spec":{"providerID":"fake://elsewhere"}}`, "spec.providerID"},
		{"podCIDR and podCIDRs", `{"spec":{"podCIDR":"10.244.9.0/24","podCIDRs":["10.244.9.0/24"]}}`, "spec.podCIDRs"},
		{"unschedulable", `{"spec":{"unschedulable":true}}`, "spec.unschedulable"},
		{"a taint", `{"spec":{"taints":[{"key":"example.com/x","effect":"NoSchedule"}]}}`, "spec.taints"},
		{"a label", `{"metadata":{"labels":{"example.com/x":"y"}}}`, "metadata.labels"},
		{"another annotation", `{"metadata":{"annotations":{"example.com/x":"y"}}}`, "metadata.annotations example.com/x"},
	} {
		err := patch(c.patch)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on its own Node: %v; want the policy's denial naming %s", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.OwnerReferences) > 0 || len(n.Finalizers) > 0 || n.Spec.ProviderID != "" || len(n.Spec.PodCIDRs) > 0 || n.Spec.Unschedulable {
		t.Errorf("a denied change landed: ownerReferences %v, finalizers %v, providerID %q, podCIDRs %v, unschedulable %v",
			n.OwnerReferences, n.Finalizers, n.Spec.ProviderID, n.Spec.PodCIDRs, n.Spec.Unschedulable)
	}
	// what the agent does write, as agent/fencelink.go sends it, still passes
	if err := annotateAs(ctx, client, own, att); err != nil {
		t.Fatalf("attesting on its own Node: %v", err)
	}
	if err := patchCondition(ctx, client, own); err != nil {
		t.Fatalf("its own status patch: %v", err)
	}
}

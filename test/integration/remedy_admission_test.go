package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestRemedyLiftsOutOfServiceOnlyOnceTheRuntimeIsNotHung: the remedy
// ServiceAccount may remove its out-of-service taint (value
// hangwatch-fenced) only while the Node's RuntimeHung is not True, with
// the JSON patch remedy sends to unfence (the Node's taints but that one,
// on the resourceVersion it read); and it may change no other field of
// the Node, each refusal naming the field: podCIDR(s), providerID, owner
// references, finalizers, unschedulable, a label.
func TestRemedyLiftsOutOfServiceOnlyOnceTheRuntimeIsNotHung(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	cs := harness.ClientFor(t, hangwatch.RemedyIdentity(t, cp))
	f := newFleet(t, cp, 1)
	ctx, node := context.Background(), f.names[0]
	oos := fmt.Sprintf(`[{"op":"add","path":"/spec/taints/-","value":{"key":%q,"value":%q,"effect":"NoExecute"}}]`,
		fencing.OutOfServiceTaint, fencing.OutOfServiceValue)
	if _, err := cp.Admin.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, []byte(oos), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.set(t, 0, corev1.ConditionTrue, time.Now())
	err := liftOutOfService(ctx, cs, node)
	if err == nil || !strings.Contains(err.Error(), "node.kubernetes.io/out-of-service") || !strings.Contains(err.Error(), "RuntimeHung is not True") {
		t.Fatalf("removing out-of-service while RuntimeHung is True: %v; want the policy's denial naming the taint", err)
	}
	t.Logf("while RuntimeHung is True: %v", err)
	for what, patch := range map[string]string{
		"podCIDR and podCIDRs": `{"spec":{"podCIDR":"10.244.7.0/24","podCIDRs":["10.244.7.0/24"]}}`,
		"providerID":           `{"spec":{"providerID":"fake://elsewhere"}}`,
		"an owner reference":   `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"5f0c2a0e-0000-4000-8000-000000000003"}]}}`,
		"a finalizer":          `{"metadata":{"finalizers":["example.com/hold"]}}`,
		"unschedulable":        `{"spec":{"unschedulable":true}}`,
		"a label":              `{"metadata":{"labels":{"example.com/x":"y"}}}`,
	} {
		want := map[string]string{"podCIDR and podCIDRs": "spec.podCIDRs", "providerID": "spec.providerID",
			"an owner reference": "metadata.ownerReferences", "a finalizer": "metadata.finalizers",
			"unschedulable": "spec.unschedulable", "a label": "metadata.labels"}[what]
		_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("remedy writing %s: %v; want the policy's denial naming %s", what, err, want)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
	f.set(t, 0, corev1.ConditionFalse, time.Now())
	if err := liftOutOfService(ctx, cs, node); err != nil {
		t.Fatalf("removing out-of-service once RuntimeHung is False: %v", err)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.OwnerReferences) > 0 || len(n.Finalizers) > 0 || n.Spec.ProviderID != "" || len(n.Spec.PodCIDRs) > 0 || n.Spec.Unschedulable {
		t.Errorf("a denied change landed: %+v %+v", n.ObjectMeta, n.Spec)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == fencing.OutOfServiceTaint {
			t.Errorf("out-of-service still on the Node: %v", n.Spec.Taints)
		}
	}
}

// liftOutOfService sends what remedy's unfence sends: the Node's taints
// but hangwatch's out-of-service one, on the resourceVersion just read.
func liftOutOfService(ctx context.Context, cs kubernetes.Interface, node string) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	taints := []corev1.Taint{}
	for _, tn := range n.Spec.Taints {
		if tn.Key != fencing.OutOfServiceTaint || tn.Value != fencing.OutOfServiceValue {
			taints = append(taints, tn)
		}
	}
	ops, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": n.ResourceVersion},
		{"op": "add", "path": "/spec/taints", "value": taints},
	})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, ops, metav1.PatchOptions{})
	return err
}

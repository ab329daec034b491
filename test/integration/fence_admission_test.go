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

// TestFenceAdmissionOnTheNode applies the DaemonSet overlay and the fence's
// RBAC for real: with a token bound to a hangwatch pod on one node, the
// ServiceAccount may attest on that Node and delete that node's pods, and
// nothing else: not another Node's attestation, not the request, not a
// label, not another node's pod.
func TestFenceAdmissionOnTheNode(t *testing.T) {
	cp, ctx, nodes := admissionSetup(t, []string{"overlays/fence/rbac-fence.yaml"}, "fence-own", "fence-other")
	own, other := nodes[0], nodes[1]
	client := cp.TokenClient(t, cp.Token(t, "kube-system", "hangwatch", hangwatchPodOn(ctx, t, cp, own)))
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", Pods: []string{"0a-1"}, At: time.Now(), Outcome: fencing.OutcomeFenced}.Annotations()
	var err error
	// the policy takes effect once the API server has loaded it
	_, _ = harness.Poll(ctx, time.Minute, "the policy to deny another Node's attestation", func() bool {
		err = annotateAs(ctx, client, other, att)
		return err != nil && strings.Contains(err.Error(), "may write only its own Node")
	}, harness.Every(200*time.Millisecond))
	if err := annotateAs(ctx, client, own, att); err != nil {
		t.Fatalf("attesting on its own Node: %v", err)
	}
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: time.Now(), ValidFor: time.Minute}.Annotations()
	for what, c := range map[string]struct {
		node string
		ann  map[string]string
		want string
	}{
		"another Node's attestation": {other, att, "may write only its own Node"},
		"the request":                {own, req, "only the fence's attestation"},
		"another annotation":         {own, map[string]string{"example.com/x": "y"}, "only the fence's attestation"},
	} {
		if err := annotateAs(ctx, client, c.node, c.ann); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want the policy's denial (%s)", what, err, c.want)
		}
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err == nil {
		t.Error("the node's ServiceAccount labelled its Node")
	}
	hangwatch.EnsureDefaultServiceAccount(t, cp, "default")
	mine, theirs := podBoundTo(ctx, t, cp, "fence-mine", own), podBoundTo(ctx, t, cp, "fence-theirs", other)
	if err := client.CoreV1().Pods("default").Delete(ctx, theirs.Name, metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "may write only its own Node") {
		t.Errorf("deleting another node's pod: %v, want the policy's denial", err)
	}
	zero := int64(0)
	if err := client.CoreV1().Pods("default").Delete(ctx, mine.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &mine.UID}}); err != nil {
		t.Errorf("deleting its own node's pod, grace 0, UID precondition: %v", err)
	}
}

// TestFenceAdmissionForRemedy: the remedy ServiceAccount may write the
// request only while RuntimeHung is True, never the attestation, and add
// node.kubernetes.io/out-of-service=hangwatch-fenced:NoExecute only while
// the attestation answers the request on the Node's current boot.
func TestFenceAdmissionForRemedy(t *testing.T) {
	harness.Parallel(t, harness.LaneAdmissionPolicies, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	cs := harness.ClientFor(t, hangwatch.RemedyIdentity(t, cp))
	f := newFleet(t, cp, 1)
	ctx, node := context.Background(), f.names[0]
	if _, err := cp.Admin.CoreV1().Nodes().PatchStatus(ctx, node, []byte(`{"status":{"nodeInfo":{"bootID":"b1"}}}`)); err != nil {
		t.Fatal(err)
	}
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: time.Now(), ValidFor: time.Minute}.Annotations()
	if err := annotateAs(ctx, cs, node, req); err == nil || !strings.Contains(err.Error(), "only while RuntimeHung is True") {
		t.Fatalf("a request while RuntimeHung is False: %v, want the policy's denial", err)
	}
	f.set(t, 0, corev1.ConditionTrue, time.Now())
	if err := annotateAs(ctx, cs, node, req); err != nil {
		t.Fatalf("a request while RuntimeHung is True: %v", err)
	}
	att := fencing.Attestation{RequestID: "f-1", BootID: "b1", At: time.Now(), Outcome: fencing.OutcomeFenced}.Annotations()
	if err := annotateAs(ctx, cs, node, att); err == nil || !strings.Contains(err.Error(), "never write it") {
		t.Errorf("remedy writing the attestation: %v, want the policy's denial", err)
	}
	addTaint := func(value string) error {
		ops := fmt.Sprintf(`[{"op":"add","path":"/spec/taints/-","value":{"key":%q,"value":%q,"effect":"NoExecute"}}]`, fencing.OutOfServiceTaint, value)
		_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, []byte(ops), metav1.PatchOptions{})
		return err
	}
	if err := addTaint(fencing.OutOfServiceValue); err == nil || !strings.Contains(err.Error(), "attestation answers the request") {
		t.Fatalf("out-of-service with no attestation: %v, want the policy's denial", err)
	}
	other := fencing.Attestation{RequestID: "f-0", BootID: "b1", At: time.Now(), Outcome: fencing.OutcomeFenced}.Annotations()
	annotateAdmin(t, cp, node, other)
	if err := addTaint(fencing.OutOfServiceValue); err == nil {
		t.Error("out-of-service on an attestation of another request was admitted")
	}
	annotateAdmin(t, cp, node, att)
	if err := addTaint("nodeshutdown"); err == nil {
		t.Error("out-of-service with another value was admitted")
	}
	if err := addTaint(fencing.OutOfServiceValue); err != nil {
		t.Fatalf("out-of-service on a matching attestation: %v", err)
	}
}

// annotateAs sets annotations on node as client (a merge patch).
func annotateAs(ctx context.Context, client kubernetes.Interface, node string, ann map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func annotateAdmin(t *testing.T, cp *harness.ControlPlane, node string, ann map[string]string) {
	t.Helper()
	if err := annotateAs(context.Background(), cp.Admin, node, ann); err != nil {
		t.Fatal(err)
	}
}

// podBoundTo creates a pod in default bound to node.
func podBoundTo(ctx context.Context, t *testing.T, cp *harness.ControlPlane, name, node string) *corev1.Pod {
	t.Helper()
	p, err := cp.Admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "pause", Image: harness.PauseImage}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

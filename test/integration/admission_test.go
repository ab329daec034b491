package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// TestAdmissionPolicyKeepsTheServiceAccountOnItsNode applies the DaemonSet
// overlay for real and checks, with a token bound to a hangwatch pod on one
// node, that its ValidatingAdmissionPolicy lets the ServiceAccount patch
// that node's status and record Events about it, and rejects the same for
// another node and for a token bound to no pod.
func TestAdmissionPolicyKeepsTheServiceAccountOnItsNode(t *testing.T) {
	cp, ctx, nodes := admissionSetup(t, nil, "vap-own", "vap-other")
	own, other := nodes[0], nodes[1]
	bound := cp.Token(t, "kube-system", "hangwatch", hangwatchPodOn(ctx, t, cp, own))
	unbound := cp.Token(t, "kube-system", "hangwatch", nil)
	client := cp.TokenClient(t, bound)

	// The policy takes effect once the API server has loaded it. A
	// condition that is not hangwatch's, on another node, is refused by
	// this policy alone (the base's condition-writers policy judges only
	// hangwatch's conditions).
	var err error
	_, _ = harness.Poll(ctx, 60*time.Second, "the policy to deny another node's status", func() bool {
		err = patchNamedCondition(ctx, client, other, "ExampleProblem", "hangwatch")
		return err != nil && strings.Contains(err.Error(), "may write only its own Node")
	}, harness.Every(200*time.Millisecond)) // the check below says what was answered instead
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), "may write only its own Node") {
		t.Fatalf("patching another node's status: %v; want the policy's denial", err)
	}
	t.Logf("another node: %v", err)
	// hangwatch's own condition there is refused by both policies; the
	// API server names the first that denied it
	if err := patchCondition(ctx, client, other); err == nil ||
		!strings.Contains(err.Error(), "may write only its own Node") && !strings.Contains(err.Error(), "may not change RuntimeHung") {
		t.Errorf("RuntimeHung on another node: %v; want a policy's denial", err)
	}
	if err := patchCondition(ctx, client, own); err != nil {
		t.Fatalf("patching its own node's status: %v", err)
	}
	if c := hangwatch.NodeCond(t, cp, own, "RuntimeHung"); c == nil || c.Reason != "RuntimeResponsive" {
		t.Errorf("own node's RuntimeHung after the patch: %+v", c)
	}
	if err := recordEvent(ctx, client, own); err != nil {
		t.Errorf("an Event about its own node: %v", err)
	}
	if err := recordEvent(ctx, client, other); err == nil || !strings.Contains(err.Error(), "may write only its own Node") {
		t.Errorf("an Event about another node: %v; want the policy's denial", err)
	}
	if err := patchNamedCondition(ctx, cp.TokenClient(t, unbound), own, "ExampleProblem", "hangwatch"); err == nil || !strings.Contains(err.Error(), "bound to a pod on a node") {
		t.Errorf("a token bound to no pod: %v; want the policy's denial", err)
	}
	if err := patchCondition(ctx, cp.TokenClient(t, unbound), own); err == nil ||
		!strings.Contains(err.Error(), "bound to a pod on a node") && !strings.Contains(err.Error(), "bound to no node") {
		t.Errorf("RuntimeHung with a token bound to no pod: %v; want a policy's denial", err)
	}
}

// hangwatchPodOn creates a hangwatch pod scheduled on node, for a token
// of the hangwatch ServiceAccount bound to it.
func hangwatchPodOn(ctx context.Context, t *testing.T, cp *harness.ControlPlane, node string) *corev1.Pod {
	t.Helper()
	pod, err := cp.Admin.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hangwatch-" + node},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "hangwatch",
			Containers: []corev1.Container{{Name: "hangwatch", Image: "hangwatch.local/hangwatch:v0.1.0"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// patchCondition sends the strategic-merge status patch hangwatch sends.
func patchCondition(ctx context.Context, c kubernetes.Interface, node string) error {
	now := metav1.Now().Rfc3339Copy().Format(time.RFC3339)
	body := fmt.Sprintf(`{"status":{"conditions":[{"type":"RuntimeHung","status":"False","reason":"RuntimeResponsive",`+
		`"message":"all probed CRI calls answered within 2s","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, now, now)
	_, err := c.CoreV1().Nodes().PatchStatus(ctx, node, []byte(body))
	return err
}

// recordEvent creates a core/v1 Event about node, as hangwatch's recorder.
func recordEvent(ctx context.Context, c kubernetes.Interface, node string) error {
	now := metav1.Now()
	_, err := c.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: node + "."},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)},
		Reason:         "RuntimeResponsive", Message: "test", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "hangwatch", Host: node}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	return err
}

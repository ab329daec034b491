package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/nodelink"
)

// TestTheFenceIsReadDeletedAndAttestedThroughTheLink: the repair process
// reads the Node's request and its pods through the agent, and the agent
// deletes what the report names (only the pod of that UID) and attests.
func TestTheFenceIsReadDeletedAndAttestedThroughTheLink(t *testing.T) {
	p, link, _ := linkedAgent(t)
	ctx := context.Background()
	order, err := link.FenceOrder(ctx)
	if err != nil || order.Request != nil {
		t.Fatalf("no request: %+v, %v", order, err)
	}
	req := fencing.Request{ID: "f-1", BootID: "b1", Deadline: time.Now().Add(time.Minute), ValidFor: time.Minute}
	n, err := p.api.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations, n.Status.NodeInfo.BootID = req.Annotations(), "b1"
	if _, err := p.api.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "aa-1",
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}}}, Spec: corev1.PodSpec{NodeName: "node-a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: "kube-system", UID: "bb-2",
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "proxy", Controller: ptr.To(true)}}}, Spec: corev1.PodSpec{NodeName: "node-a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default", UID: "cc-3"}, Spec: corev1.PodSpec{NodeName: "node-b"}},
	} {
		if _, err := p.api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p.clk.Step(3 * time.Second) // past the agent's pacing of Node reads
	order, err = link.FenceOrder(ctx)
	if err != nil || order.Request == nil || order.Request.ID != "f-1" || order.NodeBootID != "b1" || len(order.Pods) != 2 || order.Pods[1].Owner != "DaemonSet" {
		t.Fatalf("order = %+v, %v", order, err)
	}
	bad := nodelink.FenceReport{RequestID: "f-1", BootID: "b1", Fenced: true, Pods: []nodelink.FencePod{{Namespace: "default", Name: "web-0", UID: "not a uid"}}}
	if err := link.FenceReport(ctx, bad); err == nil || !strings.Contains(err.Error(), "not a pod UID") {
		t.Errorf("a report naming a malformed UID: %v, want it refused", err)
	}
	rep := nodelink.FenceReport{RequestID: "f-1", BootID: "b1", Fenced: true, Pods: order.Pods[:1]}
	if err := link.FenceReport(ctx, rep); err == nil || !strings.Contains(err.Error(), "not deleted through the agent") {
		t.Errorf("a report naming a pod not deleted: %v, want it refused", err)
	}
	stranger := nodelink.FencePod{Namespace: "default", Name: "elsewhere", UID: "cc-3"}
	if ans, err := link.FenceDelete(ctx, nodelink.FenceDeletion{RequestID: "f-1", Pods: []nodelink.FencePod{stranger}}); err != nil || !strings.Contains(ans.Failed, "not handed out") {
		t.Errorf("deleting a pod of another node: %+v, %v, want it refused", ans, err)
	}
	if ans, err := link.FenceDelete(ctx, nodelink.FenceDeletion{RequestID: "f-0", Pods: order.Pods[:1]}); err != nil || !strings.Contains(ans.Failed, "not the request") {
		t.Errorf("deleting for another request: %+v, %v, want it refused", ans, err)
	}
	if ans, err := link.FenceDelete(ctx, nodelink.FenceDeletion{RequestID: "f-1", Pods: order.Pods[:1]}); err != nil || ans.Failed != "" {
		t.Fatalf("delete web-0: %+v, %v", ans, err)
	}
	if err := link.FenceReport(ctx, nodelink.FenceReport{RequestID: "f-9", BootID: "b1"}); err == nil || !strings.Contains(err.Error(), "the Node's request is \"f-1\"") {
		t.Errorf("a report for another request than the Node's: %v, want it refused", err)
	}
	if err := link.FenceReport(ctx, rep); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{}); err == nil {
		t.Error("web-0 not deleted")
	}
	n, _ = p.api.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	att, ok, err := fencing.AttestationOf(n)
	if !ok || err != nil || !att.Answers(req, n) || !att.Fenced() || strings.Join(att.Pods, ",") != "aa-1" {
		t.Errorf("attestation %+v %v %v", att, ok, err)
	}
}

// TestFencePodsStayOnlyWhenTheyTolerateOutOfServiceForGood: a toleration
// with tolerationSeconds keeps a pod only that long, so the fence stops it.
func TestFencePodsStayOnlyWhenTheyTolerateOutOfServiceForGood(t *testing.T) {
	forGood := corev1.Toleration{Key: fencing.OutOfServiceTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	awhile := forGood
	awhile.TolerationSeconds = ptr.To[int64](300)
	pods := fencePods([]corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "stays"}, Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{forGood}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "five-minutes"}, Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{awhile}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}},
	})
	if !pods[0].StaysOutOfService || pods[1].StaysOutOfService || !pods[2].StaysOutOfService {
		t.Errorf("stays out of service: %v %v %v, want true false true", pods[0].StaysOutOfService, pods[1].StaysOutOfService, pods[2].StaysOutOfService)
	}
}

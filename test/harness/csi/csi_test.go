package csi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// TestCSIVolumeAttachesStagesAndPublishes runs a pod with a claim of the
// harness's CSI StorageClass on a real kubelet: the claim is provisioned,
// the attach-detach controller and the external-attacher attach the
// volume to the node, the kubelet stages and publishes it and the pod
// runs with the volume's folder mounted. Then the pod is deleted and the
// volume is unpublished, unstaged and detached, each call recorded.
func TestCSIVolumeAttachesStagesAndPublishes(t *testing.T) {
	harness.RequireRealParts(t)
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp, "persistentvolume-binder-controller", "persistentvolume-attach-detach-controller")
	harness.StartSchedulerT(t, cp)
	c := containerd.StartT(t, 0, 0)
	k := kubelet.StartWithPodCgroupsT(t, cp, c, "csi-a")
	csi := StartT(t, cp)
	csi.AddNodeT(t, k)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s\n%s", cp.KubectlLog("get", "nodes,pods,pv,pvc,volumeattachments,csinodes", "-A", "-o", "wide"),
				cp.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"), csi.LogTails())
		}
	})

	ctx := context.Background()
	if _, err := cp.Admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(StorageClass),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	if _, err := cp.Admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false), HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "pause", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever,
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var p *corev1.Pod
	harness.Eventually(t, 3*time.Minute, "pod user Running on "+k.Node, func() bool {
		var err error
		p, err = cp.Admin.CoreV1().Pods("default").Get(ctx, "user", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == k.Node && p.Status.Phase == corev1.PodRunning
	}, harness.UnlessExited(csi.Processes()...), harness.Explaining(func() string { return callLines(csi.Calls(k.Node)) }))
	claim, err := cp.Admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cp.Admin.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != DriverName {
		t.Fatalf("PV %s is not the driver's: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	vol := pv.Spec.CSI.VolumeHandle

	// The pod's volume is the volume's folder: a file written there is in
	// the pod's mount, as the kubelet published it.
	if err := os.WriteFile(filepath.Join(csi.DataDir, vol, "hello"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	mount := filepath.Join(k.Dir, "root", "pods", string(p.UID), "volumes", "kubernetes.io~csi", pv.Name, "mount", "hello")
	if b, err := os.ReadFile(mount); err != nil || string(b) != "hi" {
		t.Errorf("the pod's volume mount %s has %q, %v; want the volume's file", mount, b, err)
	}
	var attachments storagev1.VolumeAttachmentList
	if list, err := cp.Admin.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		attachments = *list
	}
	if len(attachments.Items) != 1 || !attachments.Items[0].Status.Attached || attachments.Items[0].Spec.NodeName != k.Node {
		t.Errorf("VolumeAttachments = %+v, want one, attached to %s", attachments.Items, k.Node)
	}
	wantCalls(t, "controller", csi.ControllerCalls(), vol, "CreateVolume", "ControllerPublishVolume")
	wantCalls(t, k.Node, csi.Calls(k.Node), vol, "NodeStageVolume", "NodePublishVolume")

	// Deleting the pod unpublishes, unstages and then detaches the volume.
	if err := cp.Admin.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 3*time.Minute, "the volume detached from "+k.Node, func() bool {
		return hasCall(csi.ControllerCalls(), vol, "ControllerUnpublishVolume")
	}, harness.UnlessExited(csi.Processes()...), harness.Explaining(func() string {
		return callLines(csi.Calls(k.Node)) + "\n" + callLines(csi.ControllerCalls())
	}))
	wantCalls(t, k.Node, csi.Calls(k.Node), vol, "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume")
	unstaged := lastCall(csi.Calls(k.Node), vol, "NodeUnstageVolume")
	detached := lastCall(csi.ControllerCalls(), vol, "ControllerUnpublishVolume")
	if detached.Time.Before(unstaged.End) {
		t.Errorf("the volume was detached (%v) before the node unstaged it (%v)", detached, unstaged)
	}
	t.Logf("calls of %s:\n%s\ncontroller's:\n%s", k.Node, callLines(csi.Calls(k.Node)), callLines(csi.ControllerCalls()))
}

// wantCalls checks that calls holds a successful call of each method on
// vol, in this order (others may come between).
func wantCalls(t *testing.T, who string, calls []Call, vol string, methods ...string) {
	t.Helper()
	i := 0
	for _, c := range calls {
		if i < len(methods) && c.Method == methods[i] && c.VolumeID == vol && c.Err == "" {
			i++
		}
	}
	if i < len(methods) {
		t.Errorf("%s's calls on %s lack %s after %v:\n%s", who, vol, methods[i], methods[:i], callLines(calls))
	}
}

func hasCall(calls []Call, vol, method string) bool {
	return lastCall(calls, vol, method).Method != ""
}

// lastCall is the last successful call of method on vol; zero if none.
func lastCall(calls []Call, vol, method string) Call {
	var last Call
	for _, c := range calls {
		if c.Method == method && c.VolumeID == vol && c.Err == "" {
			last = c
		}
	}
	return last
}

func callLines(calls []Call) string {
	var lines []string
	for _, c := range calls {
		lines = append(lines, c.String())
	}
	return strings.Join(lines, "\n")
}

package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
)

// TestPodStartStuckSeesAHeldSandbox: a real kubelet (its Pods API on, as
// from 1.37) whose CRI calls go through the fault proxy to containerd,
// and hangwatch beside it reading containerd directly and the kubelet's
// pods from its Pods API. A pod waiting for a ConfigMap that does not
// exist waits on its volume, not on the runtime: no PodStartStuck while
// it waits past the threshold. A RunPodSandbox the proxy holds, while
// every read answers: PodStartStuck True (SandboxStartStuck) within 60s
// of the pod's creation. Released, the pod runs and PodStartStuck is
// False within 10s.
func TestPodStartStuckSeesAHeldSandbox(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	cp := harness.SharedControlPlane(t)
	c := harness.StartContainerdT(t, 0, 0)
	proxy, err := criproxy.Start(filepath.Join(harness.SocketDir(t), "cri.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	k := harness.StartKubeletViaT(t, cp, c, proxy.Endpoint, harness.UniqueNode("hw-podstart"))
	d := harness.StartDaemon(t, c.Endpoint, "--kernel=false",
		"--pods-api-socket", filepath.Join(k.RootDir(), "pods-api", "pods-api.sock"), "--pod-logs-dir", filepath.Join(k.Dir, "logs"))
	stuck := func() (string, string) { s, r, _ := d.Condition(t, "PodStartStuck"); return s, r }
	harness.Eventually(t, time.Minute, "PodStartStuck False", func() bool { s, _ := stuck(); return s == "False" }, harness.UnlessExited(d))

	noConfigMap := pausePodOn(k.Node, "no-configmap-"+k.Node)
	noConfigMap.Spec.Volumes = []corev1.Volume{{Name: "cm", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "no-such-configmap"}}}}}
	noConfigMap.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cm", MountPath: "/cm"}}
	createPod(t, cp, noConfigMap)
	harness.Throughout(t, 55*time.Second, "PodStartStuck False with a pod waiting for its ConfigMap", func() bool {
		s, _ := stuck()
		return s == "False"
	}, harness.Every(500*time.Millisecond))

	release := proxy.Inject(criproxy.Fault{Method: "RunPodSandbox"})
	defer release()
	held := pausePodOn(k.Node, "held-"+k.Node)
	createPod(t, cp, held)
	created := time.Now()
	harness.Eventually(t, 2*time.Minute, "PodStartStuck True (SandboxStartStuck)", func() bool {
		s, r := stuck()
		return s == "True" && r == "SandboxStartStuck"
	}, harness.UnlessExited(d))
	raised := time.Since(created)
	_, _, msg := d.Condition(t, "PodStartStuck")
	t.Logf("PodStartStuck %v after the pod's creation: %s", raised.Round(time.Millisecond), msg)
	harness.Measure(t, "pod_start_stuck_after_held_sandbox", raised)
	if raised > time.Minute {
		t.Errorf("PodStartStuck %v after a pod whose RunPodSandbox is held; want within 60s", raised)
	}
	if s, _, _ := d.Condition(t, "RuntimeHung"); s != "False" {
		t.Errorf("RuntimeHung %s with only RunPodSandbox held: the reads answer", s)
	}

	release()
	harness.RunningOn(t, cp, 2*time.Minute, held.Name, k.Node)
	started := time.Now()
	harness.Eventually(t, time.Minute, "PodStartStuck False after the sandbox started", func() bool { s, _ := stuck(); return s == "False" }, harness.UnlessExited(d))
	cleared := time.Since(started)
	harness.Measure(t, "pod_start_stuck_cleared_after_start", cleared)
	if cleared > 10*time.Second {
		t.Errorf("PodStartStuck False %v after the pod ran; want within 10s", cleared)
	}
}

// pausePodOn is a host-network pause pod bound to node (no scheduler).
func pausePodOn(node, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: harness.PauseTemplate(nil, nil).Spec}
	p.Spec.NodeName = node
	return p
}

func createPod(t *testing.T, cp *harness.ControlPlane, p *corev1.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// the shared control plane runs no ServiceAccount controller; other
	// tests may have made it, and it stays for them
	_, err := cp.Admin.CoreV1().ServiceAccounts(p.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cp.Admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cp.Admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
}

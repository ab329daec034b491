package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// TestPodStartStuckSeesEachHeldStep: the fault proxy holds each call of
// a pod's start in turn, RunPodSandbox, then CreateContainer, then
// StartContainer, while every read answers: each time PodStartStuck is
// True with the step's reason (SandboxStartStuck, ContainerCreateStuck,
// ContainerStartStuck) within 60s of the pod's creation, and False within
// 10s of its start once released.
func TestPodStartStuckSeesEachHeldStep(t *testing.T) {
	n := startPodStartNode(t, "hw-podstart")
	n.heldStart(t, "RunPodSandbox", "SandboxStartStuck", "sandbox-held-"+n.k.Node)
	n.heldStart(t, "CreateContainer", "ContainerCreateStuck", "create-held-"+n.k.Node)
	n.heldStart(t, "StartContainer", "ContainerStartStuck", "start-held-"+n.k.Node)
}

// TestPodStartStuckOnCRIO: each step on a real CRI-O (its lists say
// which call a pod or container waits on, as containerd's do):
// RunPodSandbox, CreateContainer, then StartContainer held, each
// SandboxStartStuck, ContainerCreateStuck or ContainerStartStuck within
// 60s, False within 10s of the start.
func TestPodStartStuckOnCRIO(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	n := startPodStartNodeOn(t, startCRIO(t, 0, 0), "hw-podstart-crio")
	n.measured = "crio_"
	n.heldStart(t, "RunPodSandbox", "SandboxStartStuck", "sandbox-held-"+n.k.Node)
	n.heldStart(t, "CreateContainer", "ContainerCreateStuck", "create-held-"+n.k.Node)
	n.heldStart(t, "StartContainer", "ContainerStartStuck", "start-held-"+n.k.Node)
}

// TestPodStartStuckRaisesNothingForNormalWaits: at once on one node, 50
// pods starting, a pod waiting for a ConfigMap that does not exist (a
// volume wait), one whose image does not exist, one whose image pull the
// proxy holds, one whose init container runs on, and one in
// CrashLoopBackOff (its liveness probe fails): each seen in its wait, and
// PodStartStuck False throughout 75s, 30s past the threshold (3 minutes
// in hack/e2e.sh --write-path).
func TestPodStartStuckRaisesNothingForNormalWaits(t *testing.T) {
	n := startPodStartNode(t, "hw-podwaits")
	node := n.k.Node
	for _, p := range normalWaits(node) {
		createPod(t, n.cp, p)
	}
	harness.Eventually(t, time.Minute, "the missing image failing", n.podWaiting("no-image-"+node, "app", "ErrImagePull", "ImagePullBackOff"))
	release := n.proxy.Inject(criproxy.Fault{Method: "PullImage"})
	defer release()
	// an image not on the node (its own name: a pull in progress of the
	// pause image would make the kubelet refuse it to the PullNever pods)
	pulling := pausePodOn(node, "pulling-"+node)
	pulling.Spec.Containers[0].Image, pulling.Spec.Containers[0].ImagePullPolicy = "hangwatch.local/large-image:test", corev1.PullIfNotPresent
	createPod(t, n.cp, pulling)
	burst := time.Now()
	for i := range 50 {
		createPod(t, n.cp, pausePodOn(node, fmt.Sprintf("burst-%d-%s", i, node)))
	}
	began := time.Now()
	harness.Eventually(t, time.Minute, "the pull held", func() bool { return n.proxy.Held("PullImage") > 0 })
	harness.Eventually(t, time.Minute, "the init container running", n.podRunning("init-"+node, true))
	harness.Eventually(t, 2*time.Minute, "CrashLoopBackOff", n.podWaiting("crashloop-"+node, "pause", "CrashLoopBackOff"))
	hold := normalWaitsHeld(t)
	harness.Throughout(t, hold-time.Since(began), "PodStartStuck False with the pods in their normal waits", func() bool {
		s, _ := n.stuck(t)
		return s == "False"
	}, harness.Every(500*time.Millisecond))
	measurements.Record(t, "pod_start_stuck_normal_waits_raises", 0, "count")
	harness.Measure(t, "pod_start_stuck_normal_waits_held", time.Since(began))
	harness.Eventually(t, 3*time.Minute, "the 50 pods started at once running", func() bool { return n.runningPods(t, "burst-") == 50 },
		harness.Explaining(func() string {
			return n.cp.KubectlLog("get", "pods", "-o", "wide", "--field-selector", "spec.nodeName="+node)
		}))
	harness.Measure(t, "pod_start_burst_50_last_started", n.lastStarted(t, "burst-").Sub(burst))
	for _, name := range []string{"no-configmap-", "no-image-", "pulling-"} {
		if n.podRunning(name+node, false)() {
			t.Errorf("%s%s ran: it was to wait throughout", name, node)
		}
	}
}

// normalWaitsHeld is how long the normal waits are watched from the 50
// pods' creation: 75s, 30s past the threshold (the judgement is on state,
// a directory the kubelet has not made, which a longer wait cannot
// change), or $HANGWATCH_NORMAL_WAITS (hack/e2e.sh --write-path: 3m).
func normalWaitsHeld(t *testing.T) time.Duration {
	v := os.Getenv("HANGWATCH_NORMAL_WAITS")
	if v == "" {
		return 75 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("HANGWATCH_NORMAL_WAITS=%q: want a positive duration such as 3m", v)
	}
	return d
}

// diagStep is the step hangwatch diag names for a held method.
var diagStep = map[string]string{"RunPodSandbox": "sandbox", "CreateContainer": "create", "StartContainer": "start"}

// diagSays runs hangwatch diag beside the node: its write path section is
// Stuck, with the pod's wait first at step, and it exits 1.
func (n *podStartNode) diagSays(t *testing.T, what, step, pod string) {
	t.Helper()
	r, code, _ := runDiag(t, n.c.Endpoint, append([]string{"--kernel=false"}, hangwatch.PodStartsArgs(n.k, n.c)...)...)
	if r.PodStarts == nil || r.PodStarts.Verdict != "Stuck" || len(r.PodStarts.Waits) == 0 {
		t.Fatalf("diag with %s hanging: exit %d, podStarts %+v; want Stuck with a wait", what, code, r.PodStarts)
	}
	w := r.PodStarts.Waits[0]
	t.Logf("diag with %s hanging: exit %d, %s %s %s %.0fs", what, code, w.Pod, w.Container, w.Step, w.WaitedSeconds)
	if w.Pod != "default/"+pod || w.Step != step || w.WaitedSeconds < 45 || code != 1 {
		t.Errorf("diag with %s hanging: exit %d, first wait %+v; want default/%s at %s for 45s or more, exit 1", what, code, w, pod, step)
	}
}

// normalWaits are pods that wait for a reason not the runtime's.
func normalWaits(node string) []*corev1.Pod {
	noConfigMap := pausePodOn(node, "no-configmap-"+node)
	noConfigMap.Spec.Volumes = []corev1.Volume{{Name: "cm", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "no-such-configmap"}}}}}
	noConfigMap.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cm", MountPath: "/cm"}}
	noImage := pausePodOn(node, "no-image-"+node)
	noImage.Spec.Containers[0] = corev1.Container{Name: "app", Image: "registry.invalid/hangwatch/none:1", ImagePullPolicy: corev1.PullIfNotPresent}
	init := pausePodOn(node, "init-"+node)
	init.Spec.InitContainers = []corev1.Container{{Name: "init", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever}}
	crashloop := pausePodOn(node, "crashloop-"+node)
	crashloop.Spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt32(1)}}}
	return []*corev1.Pod{noConfigMap, noImage, init, crashloop}
}

// podWaiting tells whether the pod's container waits with one of reasons.
func (n *podStartNode) podWaiting(name, container string, reasons ...string) func() bool {
	return func() bool {
		p, err := n.cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if st.Name == container && st.State.Waiting != nil && slices.Contains(reasons, st.State.Waiting.Reason) {
				return true
			}
		}
		return false
	}
}

// runningPods counts the node's pods named with prefix that run.
func (n *podStartNode) runningPods(t *testing.T, prefix string) int {
	t.Helper()
	pods, err := n.cp.Admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.k.Node})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, prefix) && p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running
}

// lastStarted is when the last of the node's pods named with prefix
// started its container (the kubelet's clock, this machine's; whole
// seconds).
func (n *podStartNode) lastStarted(t *testing.T, prefix string) time.Time {
	t.Helper()
	pods, err := n.cp.Admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.k.Node})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, p := range pods.Items {
		for _, st := range p.Status.ContainerStatuses {
			if strings.HasPrefix(p.Name, prefix) && st.State.Running != nil && st.State.Running.StartedAt.After(last) {
				last = st.State.Running.StartedAt.Time
			}
		}
	}
	return last
}

// podRunning tells whether one of the pod's containers runs: an init
// container (init), or a regular one.
func (n *podStartNode) podRunning(name string, init bool) func() bool {
	return func() bool {
		p, err := n.cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		statuses := p.Status.ContainerStatuses
		if init {
			statuses = p.Status.InitContainerStatuses
		}
		for _, st := range statuses {
			if st.State.Running != nil {
				return true
			}
		}
		return false
	}
}

// heldStart holds method at the proxy and starts a pause pod: PodStartStuck
// True with reason within 60s of its creation, the reads answering
// (RuntimeHung False); released, the pod runs and PodStartStuck is False
// within 10s.
func (n *podStartNode) heldStart(t *testing.T, method, reason, name string) {
	release := n.proxy.Inject(criproxy.Fault{Method: method})
	defer release()
	held := pausePodOn(n.k.Node, name)
	n.stuckStart(t, held, reason, method, diagStep[method], release)
}

// stuckStart creates pod, whose start hangs at what (the step hangwatch
// diag names step): PodStartStuck True with reason within 60s of its
// creation, the reads answering (RuntimeHung False), and diag says so;
// released, the pod runs and PodStartStuck is False within 10s.
func (n *podStartNode) stuckStart(t *testing.T, pod *corev1.Pod, reason, what, step string, release func()) {
	t.Helper()
	createPod(t, n.cp, pod)
	created := time.Now()
	harness.Eventually(t, 2*time.Minute, "PodStartStuck True ("+reason+")", func() bool {
		s, r := n.stuck(t)
		return s == "True" && r == reason
	}, harness.UnlessExited(n.d))
	raised := time.Since(created)
	_, _, msg := n.d.Condition(t, "PodStartStuck")
	t.Logf("PodStartStuck %v after the pod's creation, %s hanging: %s", raised.Round(time.Millisecond), what, msg)
	harness.Measure(t, "pod_start_stuck_after_held_"+n.measured+what, raised)
	if raised > time.Minute {
		t.Errorf("PodStartStuck %v after a pod whose %s hangs; want within 60s", raised, what)
	}
	if s, _, _ := n.d.Condition(t, "RuntimeHung"); s != "False" {
		t.Errorf("RuntimeHung %s with only %s hanging: the reads answer", s, what)
	}
	if rc := pod.Spec.RuntimeClassName; rc != nil && !strings.Contains(msg, "(runtime class "+*rc+")") {
		t.Errorf("the message does not name the pod's runtime class %s: %s", *rc, msg)
	}
	n.diagSays(t, what, step, pod.Name)

	release()
	cluster.RunningOn(t, n.cp, 2*time.Minute, pod.Name, n.k.Node)
	started := time.Now()
	harness.Eventually(t, time.Minute, "PodStartStuck False after the pod started", func() bool { s, _ := n.stuck(t); return s == "False" }, harness.UnlessExited(n.d))
	cleared := time.Since(started)
	harness.Measure(t, "pod_start_stuck_cleared_after_"+n.measured+what, cleared)
	if cleared > 10*time.Second {
		t.Errorf("PodStartStuck False %v after the pod ran; want within 10s", cleared)
	}
}

// TestPodStartStuckSeesAHandlerAndANetworkThatHang: below the CRI, in
// containerd itself: a RuntimeClass whose handler's OCI runtime waits in
// `runc create` (as the NVIDIA runtime's hook can), then a pod network
// whose CNI plugin waits in ADD (a wrapper around the machine's loopback
// plugin). Each within 60s: SandboxStartStuck naming the RuntimeClass,
// then NetworkSetupStuck (containerd had made no sandbox container);
// False within 10s of the start once let go.
func TestPodStartStuckSeesAHandlerAndANetworkThatHang(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c, starts := containerd.StartHangingT(t, true)
	n := startPodStartNodeOn(t, c, "hw-podhang")
	class := createRuntimeClass(t, n.cp, containerd.HangHandler)
	handler := pausePodOn(n.k.Node, "handler-hangs-"+n.k.Node)
	handler.Spec.RuntimeClassName = &class
	n.stuckStart(t, handler, "SandboxStartStuck", "runtime_handler_create", "sandbox", starts.ReleaseRuntime)
	network := pausePodOn(n.k.Node, "network-hangs-"+n.k.Node)
	network.Spec.HostNetwork = false
	n.stuckStart(t, network, "NetworkSetupStuck", "cni_add", "network", starts.ReleaseNetwork)
}

// createRuntimeClass makes a RuntimeClass of handler, named for the test,
// and deletes it at the end.
func createRuntimeClass(t *testing.T, cp *harness.ControlPlane, handler string) string {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: hangwatch.UniqueNode("hw-class")}, Handler: handler}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cp.Admin.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{})
	})
	return rc.Name
}

// podStartNode is a real kubelet whose CRI calls go through the fault
// proxy to containerd, and hangwatch beside it reading containerd
// directly and the kubelet's pods from its Pods API.
type podStartNode struct {
	cp    *harness.ControlPlane
	c     harness.RuntimePaths
	proxy *criproxy.Proxy
	k     *kubelet.Kubelet
	d     *hangwatch.Daemon
	// measured prefixes what the node measures with its runtime's name,
	// but containerd's.
	measured string
}

// startPodStartNode is a podStartNode on containerd.
func startPodStartNode(t *testing.T, name string) *podStartNode {
	harness.Parallel(t, harness.Minutes)
	return startPodStartNodeOn(t, containerd.StartT(t, 0, 0), name)
}

func startPodStartNodeOn(t *testing.T, rt kubelet.NodeRuntime, name string) *podStartNode {
	return startPodStartNodeWith(t, rt, name, false)
}

// startPodStartNodeWith is startPodStartNodeOn with hangwatch's CRI calls
// through the fault proxy too (viaProxy), and extra arguments.
func startPodStartNodeWith(t *testing.T, rt kubelet.NodeRuntime, name string, viaProxy bool, extra ...string) *podStartNode {
	cp := hangwatch.SharedControlPlane(t)
	c := rt.Where()
	proxy, err := criproxy.Start(filepath.Join(hangwatch.SocketDir(t), "cri.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	k := kubelet.StartViaT(t, cp, rt, proxy.Endpoint, hangwatch.UniqueNode(name))
	endpoint := c.Endpoint
	if viaProxy {
		endpoint = proxy.Endpoint
	}
	d := hangwatch.StartDaemon(t, endpoint, append(append([]string{"--kernel=false"}, hangwatch.PodStartsArgs(k, c)...), extra...)...)
	n := &podStartNode{cp: cp, c: c, proxy: proxy, k: k, d: d}
	harness.Eventually(t, time.Minute, "PodStartStuck False", func() bool { s, _ := n.stuck(t); return s == "False" }, harness.UnlessExited(d))
	return n
}

// stuck is PodStartStuck's status and reason, from the daemon.
func (n *podStartNode) stuck(t *testing.T) (string, string) {
	s, r, _ := n.d.Condition(t, "PodStartStuck")
	return s, r
}

// pausePodOn is a host-network pause pod bound to node (no scheduler).
func pausePodOn(node, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: cluster.PauseTemplate(nil, nil).Spec}
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

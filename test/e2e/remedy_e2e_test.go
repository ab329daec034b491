package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/remedy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// The controllers a two-node cluster needs beside the node lifecycle
// controller: Deployments, their ReplicaSets, PodDisruptionBudgets' status
// (the Eviction API reads it) and the NoExecute taint evictions of
// Kubernetes' own path.
var twoNodeControllers = []string{"deployment-controller", "replicaset-controller", "disruption-controller", "taint-eviction-controller"}

// twoNodes is a cluster of two real kubelets, each on its own containerd
// with hangwatch as the shipped static pod, kube-controller-manager and
// kube-scheduler.
type twoNodes struct {
	cp   *harness.ControlPlane
	a, b hangwatch.StaticPodNode
}

func startTwoNodes(t *testing.T) *twoNodes {
	t.Helper()
	harness.RequireRealParts(t)
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp, twoNodeControllers...)
	harness.StartSchedulerT(t, cp)
	for _, ns := range []string{"kube-system", "default"} {
		hangwatch.EnsureDefaultServiceAccount(t, cp, ns)
	}
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	tn := &twoNodes{cp: cp}
	tn.a = startMember(t, cp, 0)
	tn.b = startMember(t, cp, 100) // hangwatch's host ports moved by 100: both share this machine's network
	tn.a.WaitHealthy(t)
	tn.b.WaitHealthy(t)
	return tn
}

// startMember is one node of the two: containerd, the kubelet talking to
// it directly, and hangwatch's static pod on ports 9764+offset, 9765+offset.
func startMember(t *testing.T, cp *harness.ControlPlane, offset int) hangwatch.StaticPodNode {
	t.Helper()
	c := containerd.StartT(t, 0, 0)
	n := hangwatch.KubeletNode{CP: cp, C: c, K: kubelet.StartT(t, cp, c, hangwatch.UniqueNode("two"))}
	image := hangwatch.HangwatchImageTar(t) // built once, before the import's deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.ImportImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	configDir := t.TempDir()
	hangwatch.WriteStaticPodConfig(t, configDir, n.K)
	if offset != 0 {
		movePorts(t, configDir, n, offset)
	} else {
		hangwatch.WriteStaticPod(t, n, configDir)
	}
	return hangwatch.StaticPodNode{KubeletNode: n, PodName: "hangwatch-" + n.K.Node, ScrapeToken: hangwatch.ApplyScraperIdentity(t, cp)}
}

// movePorts moves hangwatch's two ports in its config and static pod.
func movePorts(t *testing.T, configDir string, n hangwatch.KubeletNode, offset int) {
	t.Helper()
	var cfg map[string]any
	hangwatch.ReadYAML(t, filepath.Join(configDir, "config.yaml"), &cfg)
	server := cfg["server"].(map[string]any)
	server["listenAddress"] = "127.0.0.1:" + strconv.Itoa(9764+offset)
	server["secureListenAddress"] = "0.0.0.0:" + strconv.Itoa(9765+offset)
	hangwatch.WriteYAML(t, filepath.Join(configDir, "config.yaml"), cfg)
	hangwatch.WriteStaticPod(t, n, configDir)
	path := filepath.Join(n.K.StaticPodDir, "hangwatch.yaml")
	var pod corev1.Pod
	hangwatch.ReadYAML(t, path, &pod)
	c := &pod.Spec.Containers[0]
	c.Ports[0].ContainerPort = int32(9765 + offset)
	c.LivenessProbe.HTTPGet.Port = intstr.FromInt32(int32(9764 + offset))
	hangwatch.WriteYAML(t, path, pod)
}

// webDeployment is two pause replicas spread over the nodes, with a
// PodDisruptionBudget that keeps one available.
func webDeployment(t *testing.T, cp *harness.ControlPlane) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			HostNetwork:                   true, // the harness's containerd has no pod network; pause listens on nothing
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers:                    []corev1.Container{{Name: "web", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
		}}}}
	ctx := context.Background()
	if _, err := cp.Admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := cp.Admin.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// webPods lists the Deployment's pods.
func webPods(t *testing.T, cp *harness.ControlPlane) []corev1.Pod {
	t.Helper()
	list, err := cp.Admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func hasTaint(t *testing.T, cp *harness.ControlPlane, node, key string) bool {
	t.Helper()
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == key {
			return true
		}
	}
	return false
}

// TestTwoNodeFreezeWithRemedy freezes node A's containerd with
// hangwatch-remedy running its shipped policy, and measures from the
// freeze: RuntimeHung on A, the taint, the eviction of A's web pod and
// its replacement Running on B; no new pod lands on A. Thawed, A loses
// the taint after clearAfter.
func TestTwoNodeFreezeWithRemedy(t *testing.T) {
	twoNodeFreeze(t, true)
}

// TestTwoNodeFreezeBaseline is the same freeze without hangwatch-remedy:
// Kubernetes' own path (the kubelet's Ready=False, the not-ready NoExecute
// taint, eviction after the pods' 300 s toleration).
func TestTwoNodeFreezeBaseline(t *testing.T) {
	twoNodeFreeze(t, false)
}

func twoNodeFreeze(t *testing.T, withRemedy bool) {
	tn := startTwoNodes(t)
	name := map[bool]string{true: "remedy", false: "baseline"}[withRemedy]
	if withRemedy {
		kc := hangwatch.RemedyIdentity(t, tn.cp)
		hangwatch.StartRemedy(t, kc, filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "remedy", "config.yaml"), "hangwatch-remedy")
	}
	webDeployment(t, tn.cp)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s", tn.cp.KubectlLog("get", "nodes,deploy,rs,pods,pdb", "-A", "-o", "wide"),
				tn.cp.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"))
		}
	})
	a, b := tn.a.K.Node, tn.b.K.Node
	harness.Eventually(t, 90*time.Second, "one web pod Running on each node", func() bool {
		on := map[string]int{}
		for _, p := range webPods(t, tn.cp) {
			if cluster.PodRunning(p) {
				on[p.Spec.NodeName]++
			}
		}
		return on[a] == 1 && on[b] == 1
	})
	thaw := harness.Freeze(t, tn.a.C)
	frozen := time.Now()
	hung := tn.a.WaitNodeCond(t, time.Minute, "RuntimeHung", hangwatch.CondIs(corev1.ConditionTrue, ""))
	harness.Measure(t, "e2e_two_node_"+name+"_runtime_hung_after_freeze", hung.Sub(frozen))
	key := remedy.TaintKey("RuntimeHung")
	limit := 90 * time.Second
	if withRemedy {
		harness.Eventually(t, time.Minute, "the taint on A", func() bool { return hasTaint(t, tn.cp, a, key) })
		harness.Measure(t, "e2e_two_node_remedy_taint_after_freeze", time.Since(frozen))
	} else {
		limit = 10 * time.Minute
	}
	harness.Eventually(t, limit, "A's web pod evicted", func() bool {
		for _, p := range webPods(t, tn.cp) {
			if p.Spec.NodeName == a && p.DeletionTimestamp != nil {
				return true
			}
		}
		return false
	})
	harness.Measure(t, "e2e_two_node_"+name+"_eviction_after_freeze", time.Since(frozen))
	harness.Eventually(t, 2*time.Minute, "two web pods Running on B", func() bool {
		n := 0
		for _, p := range webPods(t, tn.cp) {
			if cluster.PodRunning(p) && p.Spec.NodeName == b {
				n++
			}
		}
		return n == 2
	})
	replaced := time.Since(frozen)
	harness.Measure(t, "e2e_two_node_"+name+"_replacement_running_after_freeze", replaced)
	for _, p := range webPods(t, tn.cp) {
		if p.CreationTimestamp.After(frozen) && p.Spec.NodeName == a {
			t.Errorf("pod %s, created %v after the freeze, was scheduled to the frozen node", p.Name, p.CreationTimestamp.Sub(frozen))
		}
	}
	t.Logf("%s: RuntimeHung %v, replacement Running on B %v after the freeze", name, hung.Sub(frozen).Round(100*time.Millisecond), replaced.Round(100*time.Millisecond))
	if !withRemedy {
		return
	}
	thaw()
	thawed := time.Now()
	tn.a.WaitNodeCond(t, time.Minute, "RuntimeHung", hangwatch.CondIs(corev1.ConditionFalse, ""))
	harness.Eventually(t, 3*time.Minute, "the taint gone from A", func() bool { return !hasTaint(t, tn.cp, a, key) })
	harness.Measure(t, "e2e_two_node_remedy_untaint_after_thaw", time.Since(thawed))
}

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
)

// fenceControllers are the controllers the fence's path needs beside the
// node lifecycle controller: StatefulSets, pod GC (which force-deletes
// the Terminating pods of an out-of-service node), the NoExecute taint
// evictions, and the volumes' binder and attach-detach.
var fenceControllers = []string{"statefulset-controller", "pod-garbage-collector-controller", "taint-eviction-controller",
	"persistentvolume-binder-controller", "persistentvolume-attach-detach-controller"}

// fenceCluster is real kubelets with pod cgroups (two unless told),
// each on its own containerd; hangwatch with the fence on (repair off) for
// each, and hangwatch-remedy with its shipped policy and the fence on.
type fenceCluster struct {
	cp      *harness.ControlPlane
	nodes   map[string]*fenceNode
	a, b, c string // c: only with fenceOptions.nodes 3
	remedy  *remedyProc
	csi     *harness.CSI // with fenceOptions.csi
}

// fenceNode is one node of the cluster and its hangwatch.
type fenceNode struct {
	c *harness.Containerd
	k *harness.Kubelet
	d *daemon
}

// fenceOptions change the shipped settings for a test.
type fenceOptions struct {
	nodes int // 2 when 0
	// unlabelled nodes (0 is A) are not labelled hangwatch.io/fence=enabled.
	unlabelled map[int]bool
	// dryRun nodes run the fence in dry run (repair.fenceDryRun).
	dryRun map[int]bool
	// policy changes remedy's policy (a YAML map) before it starts.
	policy func(p map[string]any)
	// noRemedy runs no hangwatch-remedy: Kubernetes' own path.
	noRemedy bool
	// csi starts the harness's CSI driver (harness.StartCSI) on every node.
	csi bool
}

func startFenceCluster(t *testing.T, o fenceOptions) *fenceCluster {
	t.Helper()
	harness.RequireRealParts(t)
	fc := &fenceCluster{cp: harness.StartControlPlaneT(t), nodes: map[string]*fenceNode{}}
	harness.StartControllerManagerT(t, fc.cp, fenceControllers...)
	harness.StartSchedulerT(t, fc.cp)
	for _, ns := range []string{"kube-system", "default"} {
		ensureDefaultServiceAccount(t, fc.cp, ns)
	}
	if o.csi {
		fc.csi = harness.StartCSIT(t, fc.cp)
	}
	names := []*string{&fc.a, &fc.b, &fc.c}
	for i := range max(o.nodes, 2) {
		*names[i] = fc.startNode(t, "fence-"+string(rune('a'+i)), o.dryRun[i])
		if !o.unlabelled[i] {
			fc.label(t, *names[i])
		}
		if fc.csi != nil {
			fc.csi.AddNodeT(t, fc.nodes[*names[i]].k)
		}
	}
	if !o.noRemedy {
		fc.remedy = startRemedy(t, remedyIdentity(t, fc.cp), fencePolicy(t, o.policy), "hangwatch-remedy")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s\n%s", fc.cp.KubectlLog("get", "nodes,sts,pods,pv,pvc,volumeattachments", "-A", "-o", "wide"),
				fc.cp.KubectlLog("get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations} {.spec.taints}{\"\\n\"}{end}"),
				fc.cp.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"))
		}
	})
	return fc
}

// startNode starts a containerd, a kubelet with pod cgroups and hangwatch
// (agent and repair process, repair off, the fence on) for a new node.
func (fc *fenceCluster) startNode(t *testing.T, base string, dryRun bool) string {
	t.Helper()
	n := &fenceNode{c: harness.StartContainerdT(t, 0, 0)}
	n.k = harness.StartKubeletWithPodCgroupsT(t, fc.cp, n.c, uniqueNode(base))
	dir := socketDir(t)
	config := filepath.Join(dir, "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nrepair:\n  enabled: false\n  fence: true\n"+
		"  fenceDryRun: %t\n  kubeletRootDir: %s\n", dryRun, filepath.Join(n.k.Dir, "root"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	kc, err := fc.cp.NodeKubeconfig(n.k.Node)
	if err != nil {
		t.Fatal(err)
	}
	n.d = startRepairing(t, n.c.Where().Endpoint, nodeArgs(kc, n.k.Node, "--config", config)...)
	fc.nodes[n.k.Node] = n
	return n.k.Node
}

// fencePolicy is the shipped remedy policy with the fence on, changed by
// change (nil: unchanged).
func fencePolicy(t *testing.T, change func(p map[string]any)) string {
	t.Helper()
	var p map[string]any
	readYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "remedy", "config.yaml"), &p)
	p["fence"].(map[string]any)["enabled"] = true
	if change != nil {
		change(p)
	}
	path := filepath.Join(t.TempDir(), "remedy.yaml")
	writeYAML(t, path, p)
	return path
}

func (fc *fenceCluster) label(t *testing.T, node string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fencing.OptInLabel, fencing.OptInValue)
	if _, err := fc.cp.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// statefulSet is a one-replica StatefulSet of pause, name, that prefers
// node prefer.
func statefulSet(t *testing.T, cp *harness.ControlPlane, name, prefer string) {
	t.Helper()
	statefulSetWith(t, cp, name, prefer, nil)
}

// statefulSetWith is statefulSet changed by change (nil: unchanged).
func statefulSetWith(t *testing.T, cp *harness.ControlPlane, name, prefer string, change func(*appsv1.StatefulSet)) {
	t.Helper()
	labels := map[string]string{"app": name}
	tmpl := pauseTemplate(labels, nil)
	tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{prefer}}}}}}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if change != nil {
		change(sts)
	}
	if _, err := cp.Admin.AppsV1().StatefulSets("default").Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pod is a pod of the default namespace as the API server has it; nil
// when there is none.
func (fc *fenceCluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := fc.cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// runningOn waits until the pod name runs on node and returns it.
func (fc *fenceCluster) runningOn(t *testing.T, limit time.Duration, name, node string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	harness.Eventually(t, limit, name+" Running on "+node, func() bool {
		p = fc.pod(t, name)
		return p != nil && p.Spec.NodeName == node && running(*p)
	}, harness.Explaining(func() string { return name + ": " + describePod(fc.pod(t, name)) }))
	return p
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("uid %s on %s, %s, deleting %v", p.UID, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
}

// nodeObject reads a Node.
func (fc *fenceCluster) nodeObject(t *testing.T, node string) *corev1.Node {
	t.Helper()
	n, err := fc.cp.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// outOfService tells whether node has hangwatch's out-of-service taint.
func (fc *fenceCluster) outOfService(t *testing.T, node string) bool {
	ours, _ := fencing.HasOutOfService(fc.nodeObject(t, node))
	return ours
}

// fenceEvents are the reasons of node's Events that name the fence.
func (fc *fenceCluster) fenceEvents(t *testing.T, node string) string {
	var out []string
	for _, e := range nodeEvents(t, fc.cp, node) {
		if strings.HasPrefix(e.Reason, "Fence") || e.Reason == "Unfenced" || (e.Reason == "RemedyDryRun" && strings.Contains(e.Message, "fence")) {
			out = append(out, e.Reason)
		}
	}
	return strings.Join(out, ",")
}

// pauseTemplate is a pause pod on the host network (the harness's
// containerd has no pod network), with no token.
func pauseTemplate(labels, nodeSelector map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false), HostNetwork: true, NodeSelector: nodeSelector,
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers:                    []corev1.Container{{Name: "pause", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever}}}}
}

// running: p runs and every container of it is ready.
func running(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

package cluster

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

	"encoding/json"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/csi"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// fenceControllers are the controllers the fence's path needs beside the
// node lifecycle controller: StatefulSets, pod GC (which force-deletes
// the Terminating pods of an out-of-service node), the NoExecute taint
// evictions, and the volumes' binder and attach-detach.
var fenceControllers = []string{"statefulset-controller", "pod-garbage-collector-controller", "taint-eviction-controller",
	"persistentvolume-binder-controller", "persistentvolume-attach-detach-controller"}

// FenceCluster is real kubelets with pod cgroups (two unless told),
// each on its own containerd; hangwatch with the fence on (repair off) for
// each, and hangwatch-remedy with its shipped policy and the fence on.
type FenceCluster struct {
	CP      *harness.ControlPlane
	Nodes   map[string]*FenceNode
	A, B, C string // c: only with fenceOptions.nodes 3
	Remedy  *hangwatch.Remedy
	CSI     *csi.Driver // with fenceOptions.csi
	// ProxyA stands between node A's hangwatch (agent and repair process)
	// and its containerd, with FenceOptions.ProxyA; the kubelet dials
	// containerd directly.
	ProxyA *criproxy.Proxy
}

// FenceNode is one node of the cluster and its hangwatch.
type FenceNode struct {
	C *containerd.Containerd
	K *kubelet.Kubelet
	D *hangwatch.Daemon
}

// FenceOptions change the shipped settings for a test.
type FenceOptions struct {
	Nodes int // 2 when 0
	// unlabelled nodes (0 is A) are not labelled hangwatch.io/fence=enabled.
	Unlabelled map[int]bool
	// dryRun nodes run the fence in dry run (repair.fenceDryRun).
	DryRun map[int]bool
	// policy changes remedy's policy (a YAML map) before it starts.
	Policy func(p map[string]any)
	// noRemedy runs no hangwatch-remedy: Kubernetes' own path.
	NoRemedy bool
	// csi starts the harness's CSI driver (harness.StartCSI) on every node.
	CSI bool
	// ProxyA puts a criproxy (FenceCluster.ProxyA) between node A's
	// hangwatch and its containerd, to hold chosen calls.
	ProxyA bool
	// SystemdDriver nodes run containerd and the kubelet under a systemd
	// of their own with the systemd cgroup driver (StartSystemdDriverNodeT):
	// their pods' cgroups are kubepods.slice's.
	SystemdDriver map[int]bool
}

func StartFenceCluster(t *testing.T, o FenceOptions) *FenceCluster {
	t.Helper()
	harness.RequireRealParts(t)
	fc := &FenceCluster{CP: harness.StartControlPlaneT(t), Nodes: map[string]*FenceNode{}}
	harness.StartControllerManagerT(t, fc.CP, fenceControllers...)
	harness.StartSchedulerT(t, fc.CP)
	for _, ns := range []string{"kube-system", "default"} {
		hangwatch.EnsureDefaultServiceAccount(t, fc.CP, ns)
	}
	if o.CSI {
		fc.CSI = csi.StartT(t, fc.CP)
	}
	names := []*string{&fc.A, &fc.B, &fc.C}
	for i := range max(o.Nodes, 2) {
		*names[i] = fc.startNode(t, "fence-"+string(rune('a'+i)), o.DryRun[i], i == 0 && o.ProxyA, o.SystemdDriver[i])
		if !o.Unlabelled[i] {
			fc.Label(t, *names[i])
		}
		if fc.CSI != nil {
			fc.CSI.AddNodeT(t, fc.Nodes[*names[i]].K)
		}
	}
	if !o.NoRemedy {
		fc.Remedy = hangwatch.StartRemedy(t, hangwatch.RemedyIdentity(t, fc.CP), FencePolicy(t, o.Policy), "hangwatch-remedy")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s\n%s", fc.CP.KubectlLog("get", "nodes,sts,pods,pv,pvc,volumeattachments", "-A", "-o", "wide"),
				fc.CP.KubectlLog("get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations} {.spec.taints}{\"\\n\"}{end}"),
				fc.CP.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"))
		}
	})
	return fc
}

// StartNode starts a containerd, a kubelet with pod cgroups and hangwatch
// (agent and repair process, repair off, the fence on) for a new node.
func (fc *FenceCluster) StartNode(t *testing.T, base string, dryRun bool) string {
	t.Helper()
	return fc.startNode(t, base, dryRun, false, false)
}

func (fc *FenceCluster) startNode(t *testing.T, base string, dryRun, proxied, systemdDriver bool) string {
	t.Helper()
	n := &FenceNode{}
	if systemdDriver {
		n.C, n.K = kubelet.StartSystemdDriverNodeT(t, fc.CP, hangwatch.UniqueNode(base))
	} else {
		n.C = containerd.StartT(t, 0, 0)
	}
	endpoint := n.C.Where().Endpoint
	if proxied {
		p, err := criproxy.Start(filepath.Join(hangwatch.SocketDir(t), "cri.sock"), n.C.Socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		fc.ProxyA, endpoint = p, p.Endpoint
	}
	if n.K == nil {
		n.K = kubelet.StartWithPodCgroupsT(t, fc.CP, n.C, hangwatch.UniqueNode(base))
	}
	dir := hangwatch.SocketDir(t)
	config := filepath.Join(dir, "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nrepair:\n  enabled: false\n  fence: true\n"+
		"  fenceDryRun: %t\n  kubeletRootDir: %s\n", dryRun, filepath.Join(n.K.Dir, "root"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	kc, err := fc.CP.NodeKubeconfig(n.K.Node)
	if err != nil {
		t.Fatal(err)
	}
	n.D = hangwatch.StartRepairing(t, endpoint, hangwatch.NodeArgs(kc, n.K.Node, "--config", config)...)
	fc.Nodes[n.K.Node] = n
	return n.K.Node
}

// FencePolicy is the shipped remedy policy with the fence on, changed by
// change (nil: unchanged).
func FencePolicy(t *testing.T, change func(p map[string]any)) string {
	t.Helper()
	var p map[string]any
	hangwatch.ReadYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "remedy", "config.yaml"), &p)
	p["fence"].(map[string]any)["enabled"] = true
	if change != nil {
		change(p)
	}
	path := filepath.Join(t.TempDir(), "remedy.yaml")
	hangwatch.WriteYAML(t, path, p)
	return path
}

func (fc *FenceCluster) Label(t *testing.T, node string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fencing.OptInLabel, fencing.OptInValue)
	if _, err := fc.CP.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// StatefulSet is a one-replica StatefulSet of pause, name, that prefers
// node prefer.
func StatefulSet(t *testing.T, cp *harness.ControlPlane, name, prefer string) {
	t.Helper()
	StatefulSetWith(t, cp, name, prefer, nil)
}

// StatefulSetWith is statefulSet changed by change (nil: unchanged).
func StatefulSetWith(t *testing.T, cp *harness.ControlPlane, name, prefer string, change func(*appsv1.StatefulSet)) {
	t.Helper()
	labels := map[string]string{"app": name}
	tmpl := PauseTemplate(labels, nil)
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

// Pod is a pod of the default namespace as the API server has it; nil
// when there is none.
func (fc *FenceCluster) Pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := fc.CP.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// RunningOn waits until the pod name runs on node and returns it.
func (fc *FenceCluster) RunningOn(t *testing.T, limit time.Duration, name, node string) *corev1.Pod {
	t.Helper()
	return RunningOn(t, fc.CP, limit, name, node)
}

// RunningOn waits until the default namespace's pod name runs on node and
// returns it.
func RunningOn(t *testing.T, cp *harness.ControlPlane, limit time.Duration, name, node string) *corev1.Pod {
	t.Helper()
	get := func() *corev1.Pod {
		p, err := cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	var p *corev1.Pod
	harness.Eventually(t, limit, name+" Running on "+node, func() bool {
		p = get()
		return p != nil && p.Spec.NodeName == node && PodRunning(*p)
	}, harness.Explaining(func() string { return name + ": " + DescribePod(get()) }))
	return p
}

func DescribePod(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("uid %s on %s, %s, deleting %v", p.UID, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
}

// NodeObject reads a Node.
func (fc *FenceCluster) NodeObject(t *testing.T, node string) *corev1.Node {
	t.Helper()
	n, err := fc.CP.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// OutOfService tells whether node has hangwatch's out-of-service taint.
func (fc *FenceCluster) OutOfService(t *testing.T, node string) bool {
	ours, _ := fencing.HasOutOfService(fc.NodeObject(t, node))
	return ours
}

// FenceEvents are the reasons of node's Events that name the fence.
func (fc *FenceCluster) FenceEvents(t *testing.T, node string) string {
	var out []string
	for _, e := range harness.NodeEvents(t, fc.CP, node) {
		if strings.HasPrefix(e.Reason, "Fence") || e.Reason == "Unfenced" || (e.Reason == "RemedyDryRun" && strings.Contains(e.Message, "fence")) {
			out = append(out, e.Reason)
		}
	}
	return strings.Join(out, ",")
}

// PauseTemplate is a pause pod on the host network (the harness's
// containerd has no pod network), with no token.
func PauseTemplate(labels, nodeSelector map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false), HostNetwork: true, NodeSelector: nodeSelector,
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers:                    []corev1.Container{{Name: "pause", Image: harness.PauseImage, ImagePullPolicy: corev1.PullNever}}}}
}

// PodRunning: p runs and every container of it is ready.
func PodRunning(p corev1.Pod) bool {
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

// ConditionIs tells whether node's condType has status.
func (fc *FenceCluster) ConditionIs(t *testing.T, node, condType string, status corev1.ConditionStatus) func() bool {
	return func() bool { c := hangwatch.NodeCond(t, fc.CP, node, condType); return c != nil && c.Status == status }
}

// Attested tells whether node carries an attestation.
func (fc *FenceCluster) Attested(t *testing.T, node string) func() bool {
	return func() bool { _, ok, _ := fencing.AttestationOf(fc.NodeObject(t, node)); return ok }
}

// HeldBack waits for remedy's RemedyHeldBack Event on node saying why.
func (fc *FenceCluster) HeldBack(t *testing.T, node, why string) {
	t.Helper()
	harness.Eventually(t, time.Minute, "remedy to hold the fence of "+node+" back: "+why, func() bool {
		for _, e := range harness.NodeEvents(t, fc.CP, node) {
			if e.Reason == "RemedyHeldBack" && strings.Contains(e.Message, why) {
				return true
			}
		}
		return false
	}, harness.Explaining(func() string { return fmt.Sprint(harness.NodeEvents(t, fc.CP, node)) }))
}

// SetTaints replaces node's taints but remedy's own with taints.
func (fc *FenceCluster) SetTaints(t *testing.T, node string, taints ...corev1.Taint) {
	t.Helper()
	for _, tn := range fc.NodeObject(t, node).Spec.Taints {
		if strings.HasPrefix(tn.Key, "hangwatch.io/") {
			taints = append(taints, tn)
		}
	}
	patch := fmt.Sprintf(`{"spec":{"taints":%s}}`, MustJSON(t, taints))
	if _, err := fc.CP.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func MustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// NoFencedContainerRuns: the runtime of node, thawed, runs no container of
// the fenced pod uid.
func (fc *FenceCluster) NoFencedContainerRuns(t *testing.T, node, uid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := fc.Nodes[node].C.Runtime().ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Containers {
		if c.Labels["io.kubernetes.pod.uid"] == uid && c.State.String() == "CONTAINER_RUNNING" {
			t.Errorf("fenced pod %s's container %s runs again on %s", uid, c.Id, node)
		}
	}
}

// TakesNewPods: a pod bound to node runs there.
func (fc *FenceCluster) TakesNewPods(t *testing.T, node string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-fence", Namespace: "default"}, Spec: PauseTemplate(nil, nil).Spec}
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	if _, err := fc.CP.Admin.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 2*time.Minute, "a new pod Running on "+node, func() bool {
		got, err := fc.CP.Admin.CoreV1().Pods("default").Get(context.Background(), "after-fence", metav1.GetOptions{})
		return err == nil && PodRunning(*got)
	})
}

// VolumeFile is the host path of file on the volume of pod's claim "data".
func (fc *FenceCluster) VolumeFile(t *testing.T, pod, file string) string {
	t.Helper()
	return volumeFile(t, fc.CP, fc.CSI, pod, file)
}

// volumeFile is the host path of file on the volume of pod's claim
// "data", a volume of csi.
func volumeFile(t *testing.T, cp *harness.ControlPlane, driver *csi.Driver, pod, file string) string {
	t.Helper()
	pvc, err := cp.Admin.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data-"+pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cp.Admin.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil {
		t.Fatalf("the claim's volume: %v %v", pv, err)
	}
	return filepath.Join(driver.DataDir, pv.Spec.CSI.VolumeHandle, file)
}

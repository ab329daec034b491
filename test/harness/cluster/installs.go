package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/csi"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// ShippedImage is the image every shipped manifest and the chart name
// (the overlays' images: newTag, the chart's appVersion).
const ShippedImage = "hangwatch.local/hangwatch:v0.1.0"

// The roles of the installs cluster's nodes, a label on each Node that the
// installs patches select on (installs-patches.yaml).
const (
	// installsRoleLabelValue is installsRoleLabel as a helm --set path in
	// uninstall.nodeSelector.
	installsRoleLabelValue = `uninstall.nodeSelector.test\.hangwatch\.io/role`
	installsRoleLabel      = "test.hangwatch.io/role"
	roleWatched            = "watched"
	roleSpare              = "spare"
)

// installsControllers are the controllers the shipped installs and the
// whole ladder need: DaemonSets, the remedy Deployment, the garbage collector (an uninstall deletes their pods through it), the chart's uninstall hook Job, the StatefulSet the
// fence moves, evictions, the out-of-service path, and the kube-root-ca.crt
// ConfigMap every pod's ServiceAccount token volume mounts.
var installsControllers = append([]string{"daemonset-controller", "deployment-controller", "replicaset-controller",
	"disruption-controller", "root-ca-certificate-publisher-controller", "garbage-collector-controller", "job-controller"}, fenceControllers...)

// Installs is a cluster on which hangwatch is installed as it ships, from
// its image, as pods: node A (watched), whose containerd and kubelet (pod
// cgroups, ports 10250 and 10248) a real systemd runs in a mount namespace
// with a node's directories (Systemd.GiveNodeDirs), and node B (spare), a
// plain kubelet on its own containerd; kube-scheduler and the controllers.
type Installs struct {
	CP   *harness.ControlPlane
	A, B string
	C    *containerd.Containerd // A's, under SD
	SD   *systemd.Systemd
	K    *kubelet.Kubelet // A's
	KB   *kubelet.Kubelet
	CB   *containerd.Containerd
	CSI  *csi.Driver // after csi.Start
	How  string      // "kustomize" or "helm"
	// Installed is when the install command returned.
	Installed time.Time
	patches   string // installs-patches.yaml with the API server's port
	// runtimeStarted is when A's containerd was started.
	runtimeStarted time.Time
	// daemon and remedy are hangwatch's processes when How is
	// "binaries": the same cluster, hangwatch run as the other e2e tests
	// run it, for comparison.
	daemon *hangwatch.Daemon
	remedy *hangwatch.Remedy
	// scrapeToken is the PodMonitor's ServiceAccount's token, for the
	// agent's /metrics on 9765.
	scrapeToken string
}

// StartInstalls starts the cluster and installs hangwatch by how
// ("kustomize": the fence and remedy overlays; "helm": the chart with
// repair, the fence and remedy on), then waits until its pods run and A's
// conditions are False. The fence is opted in on A (its label) and in
// remedy's policy, as an operator turns it on.
func StartInstalls(t *testing.T, how string) *Installs {
	t.Helper()
	systemd.Require(t)
	in := &Installs{CP: harness.StartControlPlaneT(t), How: how}
	harness.StartControllerManagerT(t, in.CP, installsControllers...)
	harness.StartSchedulerT(t, in.CP)
	for _, ns := range []string{"kube-system", "default"} {
		hangwatch.EnsureDefaultServiceAccount(t, in.CP, ns)
	}
	in.startNodeA(t)
	in.CB = containerd.StartT(t, 0, 0)
	in.KB = kubelet.StartT(t, in.CP, in.CB, hangwatch.UniqueNode("installs-b"))
	in.B = in.KB.Node
	in.label(t, in.A, map[string]string{installsRoleLabel: roleWatched, fencing.OptInLabel: fencing.OptInValue})
	in.label(t, in.B, map[string]string{installsRoleLabel: roleSpare})
	in.importImage(t)
	in.patches = strings.ReplaceAll(installsPatches, "KUBERNETES_SERVICE_PORT_VALUE", in.CP.Port())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s\n%s", in.CP.KubectlLog("get", "nodes,ds,deploy,sts,pods", "-A", "-o", "wide"),
				in.CP.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"), in.PodLogs(t))
		}
	})
	in.Install(t)
	if how != "binaries" {
		in.scrapeToken = hangwatch.ApplyScraperIdentity(t, in.CP)
	}
	return in
}

func (in *Installs) startNodeA(t *testing.T) {
	t.Helper()
	in.runtimeStarted = time.Now()
	in.C, in.SD = containerd.StartUnderSystemdT(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, err := kubelet.StartUnderSystemdWith(ctx, in.CP, in.C, hangwatch.UniqueNode("installs-a"), kubelet.UnitOptions{PodCgroups: true, NodeLayout: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	in.K, in.A = k, k.Node
	if err := in.SD.GiveNodeDirs(ctx, k.RootDir(), in.C.Dir, "/run/containerd", filepath.Join(k.Dir, "logs")); err != nil {
		t.Fatal(err)
	}
}

func (in *Installs) label(t *testing.T, node string, labels map[string]string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":%s}}`, MustJSON(t, labels))
	if _, err := in.CP.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// importImage imports the image hack/image.sh builds into both nodes'
// containerds under the shipped name; nothing is pulled.
func (in *Installs) importImage(t *testing.T) {
	t.Helper()
	tar := hangwatch.HangwatchImageTar(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, c := range []*containerd.Containerd{in.C, in.CB} {
		if err := c.ImportImage(ctx, tar); err != nil {
			t.Fatal(err)
		}
		if err := c.TagImage(ctx, hangwatch.StaticPodImage, ShippedImage); err != nil {
			t.Fatal(err)
		}
	}
}

// Pods are the pods of the workload named (hangwatch, hangwatch-repair,
// hangwatch-remedy), by the app.kubernetes.io/name label both installs
// give them.
func (in *Installs) Pods(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	list, err := in.CP.Admin.CoreV1().Pods("kube-system").List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Running is the workload's pod that runs and is ready, or nil.
func (in *Installs) Running(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	for _, p := range in.Pods(t, name) {
		if PodRunning(p) {
			return &p
		}
	}
	return nil
}

// WaitRunning waits until hangwatch's pods run: the agent and the repair
// process on A, remedy on B, and A's five conditions are False
// (PodStartStuck: the kubelet's Pods API and pod logs read as installed).
func (in *Installs) WaitRunning(t *testing.T, limit time.Duration) {
	t.Helper()
	where := map[string]string{"hangwatch": in.A, "hangwatch-repair": in.A, "hangwatch-remedy": in.B}
	if in.How == "binaries" {
		where = nil
	}
	harness.Eventually(t, limit, "hangwatch's pods Running as installed", func() bool {
		for name, node := range where {
			if p := in.Running(t, name); p == nil || p.Spec.NodeName != node {
				return false
			}
		}
		return true
	}, harness.Explaining(func() string { return in.CP.KubectlLog("get", "pods", "-n", "kube-system", "-o", "wide") }))
	for _, c := range []string{"RuntimeHung", "KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy", "PodStartStuck"} {
		if _, _, err := hangwatch.PollNode(t, in.CP, time.Minute, in.A, c, hangwatch.CondIs(corev1.ConditionFalse, "")); err != nil {
			t.Fatalf("%v\n%s", err, in.PodLogs(t))
		}
	}
}

// RunningOn waits until the default namespace's pod name runs on node.
func (in *Installs) RunningOn(t *testing.T, limit time.Duration, name, node string) *corev1.Pod {
	t.Helper()
	return RunningOn(t, in.CP, limit, name, node)
}

// ConditionIs tells whether A's condType has status.
func (in *Installs) ConditionIs(t *testing.T, condType string, status corev1.ConditionStatus) func() bool {
	return func() bool { c := hangwatch.NodeCond(t, in.CP, in.A, condType); return c != nil && c.Status == status }
}

// UninstallAndList removes hangwatch as it was installed, waits until its
// pods are gone, and after kubectl delete -k runs `hangwatch-remedy
// uninstall` as an operator does (the cluster's administrator; the chart
// runs it in its post-delete hook: docs/install.md, "Uninstall"); it returns
// what hangwatch left on the Nodes (its taints, its out-of-service taint,
// fence annotations) and its conditions.
func (in *Installs) UninstallAndList(t *testing.T) (left []string, conditions []string) {
	t.Helper()
	in.Uninstall(t)
	harness.Eventually(t, 2*time.Minute, "hangwatch's pods gone", func() bool {
		return len(in.Pods(t, "hangwatch"))+len(in.Pods(t, "hangwatch-repair"))+len(in.Pods(t, "hangwatch-remedy")) == 0
	}, harness.Explaining(func() string { return in.CP.KubectlLog("get", "pods", "-n", "kube-system", "-o", "wide") }))
	if in.How != "helm" { // helm uninstall ran it already, in its post-delete hook
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, hangwatch.RemedyBinary(t), "uninstall", "--kubeconfig", in.CP.AdminKubeconfig, "--timeout", "90s").CombinedOutput()
		if err != nil {
			t.Fatalf("hangwatch-remedy uninstall: %v\n%s", err, out)
		}
		t.Logf("hangwatch-remedy uninstall:\n%s", out)
	}
	for _, node := range []string{in.A, in.B} {
		n, err := in.CP.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range n.Spec.Taints {
			if strings.HasPrefix(tn.Key, "hangwatch.io/") || (tn.Key == fencing.OutOfServiceTaint && tn.Value == fencing.OutOfServiceValue) {
				left = append(left, fmt.Sprintf("%s: taint %s=%s:%s", node, tn.Key, tn.Value, tn.Effect))
			}
		}
		for _, a := range append(fencing.RequestAnnotations, fencing.AttestationAnnotations...) {
			if v, ok := n.Annotations[a]; ok {
				left = append(left, fmt.Sprintf("%s: annotation %s=%s", node, a, v))
			}
		}
		for _, c := range n.Status.Conditions {
			if slices.Contains([]string{"RuntimeHung", "KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy"}, string(c.Type)) {
				conditions = append(conditions, fmt.Sprintf("%s: %s=%s %s", node, c.Type, c.Status, c.Reason))
			}
		}
	}
	return left, conditions
}

// StartCSI starts the harness's CSI driver for the installs cluster: its
// controller side, B's node instance, and A's as units of A's systemd (in
// A's mount namespace, where A's kubelet and pods mount, as a node runs
// its CSI node plugin).
func (in *Installs) StartCSI(t *testing.T) {
	t.Helper()
	in.CSI = csi.StartT(t, in.CP)
	in.CSI.AddNodeT(t, in.KB)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { in.CSI.StopNode(in.A) })
	if err := in.CSI.AddNodeUnder(ctx, in.SD, in.K); err != nil {
		t.Fatalf("add the CSI driver to node %s under its systemd: %v", in.A, err)
	}
}

// VolumeFile is the host path of file on the volume of pod's claim
// "data" (WriterStatefulSet's).
func (in *Installs) VolumeFile(t *testing.T, pod, file string) string {
	t.Helper()
	return volumeFile(t, in.CP, in.CSI, pod, file)
}

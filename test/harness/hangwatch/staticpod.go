package hangwatch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"math"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/nodestatus"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// hangwatchImage is built once per test binary with the README's image
// command.
var hangwatchImage struct {
	once sync.Once
	tar  string
	err  error
}

const StaticPodImage = "hangwatch.local/hangwatch:static-pod-test"

func HangwatchImageTar(t *testing.T) string {
	t.Helper()
	hangwatchImage.once.Do(func() {
		hangwatchImage.tar = filepath.Join(workDir, "hangwatch-image.tar") // TestMain removes it
		cmd := exec.Command("bash", "hack/image.sh", "--ref", StaticPodImage, "--out", hangwatchImage.tar)
		cmd.Dir = harness.ModuleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			hangwatchImage.err = fmt.Errorf("hack/image.sh: %w\n%s", err, out)
		}
	})
	if hangwatchImage.err != nil {
		t.Fatal(hangwatchImage.err)
	}
	return hangwatchImage.tar
}

// StaticPodNode is a real kubelet on its own containerd, running hangwatch
// as the static pod in manifests/static-pod, from the locally built image.
type StaticPodNode struct {
	KubeletNode
	PodName string
	Proxy   *criproxy.Proxy // between the kubelet and containerd; hangwatch talks to containerd
	// scrapeToken is the PodMonitor's ServiceAccount's, for the secure port.
	ScrapeToken string
}

// HangwatchMetrics reads hangwatch's /metrics on the shipped secure port
// (9765 on the host network) as the PodMonitor does.
func (n StaticPodNode) HangwatchMetrics(t *testing.T) string {
	t.Helper()
	code, body := harness.MustGet(t, "https://127.0.0.1:9765/metrics", harness.Token(n.ScrapeToken), harness.Client(harness.SecureClient))
	if code != http.StatusOK {
		t.Fatalf("GET /metrics on the secure port as the PodMonitor's ServiceAccount: %d %s", code, body)
	}
	return body
}

// StartStaticPodNode starts a single-node cluster of its own: etcd,
// kube-apiserver, kube-controller-manager's node lifecycle controller at
// its default grace period, containerd, the CRI fault proxy and a kubelet
// talking to containerd through it; then hangwatch's static pod, with the
// shipped manifest and config changed only where this machine differs from
// a kubeadm node: the host paths of the runtimes' socket directories, the
// kubelet's kubeconfig and its certificates, the kubelet's port, a kernel
// lookback of 0 so earlier tests' kmsg lines do not count, and the built-in
// kernel rules opted in to facility user, which the tests' kmsg lines are.
// hangwatch finds containerd's socket and talks to it directly, as on a
// real node.
func StartStaticPodNode(t *testing.T) StaticPodNode {
	t.Helper()
	harness.RequireRealParts(t)
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp)
	EnsureDefaultServiceAccount(t, cp, "kube-system")
	c := kubelet.StartNodeRuntimeT(t)
	proxy, err := criproxy.Start(filepath.Join(c.Where().Dir, "kubelet-cri-proxy.sock"), c.Where().Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	n := KubeletNode{CP: cp, C: c, K: kubelet.StartViaT(t, cp, c, proxy.Endpoint, UniqueNode("static"))}
	image := HangwatchImageTar(t) // built once, before the import's deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.C.ImportImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	n.CP.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	configDir := t.TempDir()
	WriteStaticPodConfig(t, configDir, n.K)
	WriteStaticPod(t, n, configDir)
	return StaticPodNode{KubeletNode: n, PodName: "hangwatch-" + n.K.Node, Proxy: proxy, ScrapeToken: ApplyScraperIdentity(t, cp)}
}

// WaitHealthy waits for hangwatch's five conditions to be False on the
// Node (PodStartStuck: the kubelet's Pods API read from the pod) and
// checks it sent no Warning while starting.
func (n StaticPodNode) WaitHealthy(t *testing.T) {
	t.Helper()
	started := time.Now()
	n.WaitNodeCond(t, 2*time.Minute, "RuntimeHung", CondIs(corev1.ConditionFalse, "RuntimeResponsive"))
	for _, c := range []string{"KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy", "PodStartStuck"} {
		n.WaitNodeCond(t, 30*time.Second, c, CondIs(corev1.ConditionFalse, ""))
	}
	t.Logf("static pod hangwatch wrote its conditions False %v after the manifest", time.Since(started).Round(time.Millisecond))
	n.AssertNotShared(t)
	for _, e := range harness.NodeEvents(t, n.CP, n.K.Node) {
		if e.Source.Component == "hangwatch" && e.Type == corev1.EventTypeWarning {
			t.Errorf("a healthy node starting got a Warning from hangwatch: %s %s", e.Reason, e.Message)
		}
	}
}

// AssertNotShared reads the Node's managedFields as hangwatch does: the
// real kubelet, which patches the whole status, must not count as another
// writer of hangwatch's conditions, or hangwatch would leave them. (The
// harness's API server records no field managers for a Node the kubelet
// created, so here this holds trivially; TestSharedAndLeftBehindConditions
// covers a Node that has them.)
func (n StaticPodNode) AssertNotShared(t *testing.T) {
	t.Helper()
	node, err := n.CP.Admin.CoreV1().Nodes().Get(context.Background(), n.K.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := nodestatus.ReadWriters(node.ManagedFields)
	for _, c := range []string{"RuntimeHung", "KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy"} {
		if len(w.Others[c]) > 0 {
			t.Errorf("managedFields: %s written by others %v; want hangwatch alone", c, w.Others[c])
		}
	}
}

func WriteStaticPodConfig(t *testing.T, dir string, k *kubelet.Kubelet) {
	t.Helper()
	var cfg map[string]any
	ReadYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "static-pod", "config.yaml"), &cfg)
	cfg["kubelet"].(map[string]any)["metricsURL"] = k.MetricsURL()
	cfg["kubelet"].(map[string]any)["healthzURL"] = k.HealthzURL() // the harness kubelet's is on a free port, not 10248
	// The shipped config verifies the kubelet's self-signed serving
	// certificate against the node's name; here it is in the kubelet's
	// cert dir, so it goes into the config's folder.
	cert, err := os.ReadFile(k.ServingCert)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubelet.crt"), cert, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg["kubelet"].(map[string]any)["caFile"] = "/etc/hangwatch/kubelet.crt"
	cfg["kernel"].(map[string]any)["lookback"] = "0s"
	// The tests write their kernel lines to /dev/kmsg (facility user): the
	// built-in rules, opted in to it, in the config's folder.
	rules, err := os.ReadFile(UserFacilityRules(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel-rules.json"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg["kernel"].(map[string]any)["rules"] = []string{"/etc/hangwatch/kernel-rules.json"}
	WriteYAML(t, filepath.Join(dir, "config.yaml"), cfg)
}

func WriteStaticPod(t *testing.T, n KubeletNode, configDir string) {
	t.Helper()
	var pod corev1.Pod
	ReadYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "static-pod", "hangwatch.yaml"), &pod)
	kubeconfig, err := n.CP.NodeKubeconfig(n.K.Node)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's directory holds its socket (containerd.sock or
	// crio.sock), which the shipped config, with no runtime.endpoint, finds
	// at /run/containerd or /run/crio in the pod; the other runtime's
	// directory is empty, as on a node that runs one.
	// The empty one is made in the runtime's directory, a shared mount,
	// which HostToContainer propagation requires (this machine's / is
	// private).
	where := n.C.Where()
	other := filepath.Join(where.Dir, "other-runtime")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPaths := map[string]string{"runtime-socket-containerd": other, "runtime-socket-crio": other,
		"kubeconfig": kubeconfig, "kubelet-pki": n.CP.Dir, "config": configDir,
		"kubelet-pods-api": filepath.Join(n.K.RootDir(), "pods-api"), "pod-logs": filepath.Join(n.K.Dir, "logs")}
	hostPaths["runtime-socket-"+filepath.Base(where.NodeSocketDir)] = where.Dir
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if p, ok := hostPaths[v.Name]; ok {
			v.HostPath.Path = p
			delete(hostPaths, v.Name)
		}
	}
	if len(hostPaths) > 0 {
		t.Fatalf("manifests/static-pod/hangwatch.yaml has no volumes %v", hostPaths)
	}
	c := &pod.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = StaticPodImage, corev1.PullNever
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == "kubelet-pki" { // the kubeconfig names its certificates by these paths
			c.VolumeMounts[i].MountPath = n.CP.Dir
		}
	}
	WriteYAML(t, filepath.Join(n.K.StaticPodDir, "hangwatch.yaml"), pod)
}

func ReadYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func WriteYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// WaitNodeCond polls the Node until its condition condType satisfies ok,
// and returns when that was first seen; it fails the test after limit,
// with what the static pod is doing.
func (n StaticPodNode) WaitNodeCond(t *testing.T, limit time.Duration, condType string, ok func(*corev1.NodeCondition) bool) time.Time {
	t.Helper()
	_, seen, err := PollNode(t, n.CP, limit, n.K.Node, condType, ok, harness.Every(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%v: %+v\n%s", err, NodeCond(t, n.CP, n.K.Node, condType), n.Diagnose(t))
	}
	return seen
}

// Diagnose tells what the static pod is doing: the mirror pod's status and
// the container's log.
func (n StaticPodNode) Diagnose(t *testing.T) string {
	var b strings.Builder
	p, err := n.CP.Admin.CoreV1().Pods("kube-system").Get(context.Background(), n.PodName, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "mirror pod: %v\n", err)
	} else {
		data, _ := yaml.Marshal(p.Status.ContainerStatuses)
		fmt.Fprintf(&b, "mirror pod phase %s:\n%s", p.Status.Phase, data)
	}
	logs, _ := filepath.Glob(filepath.Join(n.K.Dir, "logs", "kube-system_"+n.PodName+"_*", "hangwatch", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "%s:\n%s\n", l, strings.Join(lines, "\n"))
	}
	return b.String()
}

// SkipWhenPLEGGaugeUntrusted skips a PLEG-path scenario on a kubelet
// whose kubelet_pleg_last_seen_seconds hangwatch rightly does not trust:
// the Evented PLEG before 1.37 sets it to now on every check and runs the
// generic relist only every 300 s, with a 10 min threshold. A hang of the
// kubelet's calls alone (the fault proxy sits only on the kubelet's path)
// is then visible neither to hangwatch nor, for 10 minutes, to the
// kubelet; a hang of the runtime itself is RuntimeHung (the frozen
// scenario). The scrape must have worked, or the skip would hide a fault.
func (n StaticPodNode) SkipWhenPLEGGaugeUntrusted(t *testing.T) {
	t.Helper()
	text := n.HangwatchMetrics(t)
	age := harness.SeriesOf(text, "hangwatch_pleg_last_seen_age_seconds")["hangwatch_pleg_last_seen_age_seconds"]
	scraped := harness.SeriesOf(text, "hangwatch_kubelet_metrics_scrapes_total")[`hangwatch_kubelet_metrics_scrapes_total{result="ok"}`]
	if !math.IsNaN(age) || scraped == 0 {
		return
	}
	measurements.Record(t, "e2e_pleg_path_unobservable", 1, "bool")
	t.Skipf("kubelet %s with gates %q: the Evented PLEG before 1.37 fakes kubelet_pleg_last_seen_seconds and relists every 300 s; "+
		"a hang on the kubelet's path alone is not observable from outside the kubelet", n.KubeletVersion(t), os.Getenv("HANGWATCH_KUBELET_FEATURE_GATES"))
}

func (n StaticPodNode) KubeletVersion(t *testing.T) string {
	t.Helper()
	node, err := n.CP.Admin.CoreV1().Nodes().Get(context.Background(), n.K.Node, metav1.GetOptions{})
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	return node.Status.NodeInfo.KubeletVersion
}

// Victim runs a static pod of the pause image and returns its sandbox and
// container IDs once it runs.
func (n StaticPodNode) Victim(t *testing.T) (sandbox, container string) {
	t.Helper()
	if err := n.K.StaticPod("victim"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, "the victim static pod to run", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := n.C.Runtime().ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": "victim-" + n.K.Node}}})
		if err == nil && len(list.Containers) > 0 {
			sandbox, container = list.Containers[0].PodSandboxId, list.Containers[0].Id
			return true
		}
		return false
	}, harness.Every(200*time.Millisecond))
	return sandbox, container
}

// StopContainer stops a container at containerd, around the proxy: a
// change the kubelet's next relist inspects.
func (n StaticPodNode) StopContainer(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.C.Runtime().StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0}); err != nil {
		t.Fatal(err)
	}
}

func (n StaticPodNode) FootprintSample(t *testing.T, pid int) harness.Footprint {
	t.Helper()
	hw := n.HangwatchMetrics(t)
	_, kl := harness.MustGet(t, n.K.ReadOnlyMetricsURL())
	cpu, mem := harness.ReadFootprint(t, pid)
	return harness.Footprint{At: time.Now(), Cpu: cpu, Rss: mem,
		HangwatchCalls: harness.SumSeries(hw, "hangwatch_cri_probes_total") + 2*harness.SumSeries(hw, "hangwatch_pleg_emulated_relists_total"),
		KubeletCalls:   harness.SumSeries(kl, "kubelet_runtime_operations_total"), HangwatchText: hw}
}

// CountRunningContainers counts the containers containerd runs, -1 when
// it does not answer.
func (n StaticPodNode) CountRunningContainers() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := n.C.Runtime().ListContainers(ctx, RunningContainers())
	if err != nil {
		return -1
	}
	return len(list.Containers)
}

// RunningContainers asks a runtime for its running containers.
func RunningContainers() *runtimeapi.ListContainersRequest {
	return &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}}
}

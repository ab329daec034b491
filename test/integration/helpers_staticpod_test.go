package integration

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

	"github.com/hangwatch/hangwatch/nodestatus"
	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
)

// hangwatchImage is built once per test binary with the README's image
// command.
var hangwatchImage struct {
	once sync.Once
	tar  string
	err  error
}

const staticPodImage = "hangwatch.local/hangwatch:static-pod-test"

func hangwatchImageTar(t *testing.T) string {
	t.Helper()
	hangwatchImage.once.Do(func() {
		hangwatchImage.tar = filepath.Join(workDir, "hangwatch-image.tar") // TestMain removes it
		cmd := exec.Command("bash", "hack/image.sh", "--ref", staticPodImage, "--out", hangwatchImage.tar)
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

// staticPodNode is a real kubelet on its own containerd, running hangwatch
// as the static pod in manifests/static-pod, from the locally built image.
type staticPodNode struct {
	kubeletNode
	podName string
	proxy   *criproxy.Proxy // between the kubelet and containerd; hangwatch talks to containerd
	// scrapeToken is the PodMonitor's ServiceAccount's, for the secure port.
	scrapeToken string
}

// hangwatchMetrics reads hangwatch's /metrics on the shipped secure port
// (9765 on the host network) as the PodMonitor does.
func (n staticPodNode) hangwatchMetrics(t *testing.T) string {
	t.Helper()
	code, body := secureGet(t, "https://127.0.0.1:9765/metrics", n.scrapeToken)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics on the secure port as the PodMonitor's ServiceAccount: %d %s", code, body)
	}
	return body
}

// startStaticPodNode starts a single-node cluster of its own: etcd,
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
func startStaticPodNode(t *testing.T) staticPodNode {
	t.Helper()
	harness.RequireRealParts(t)
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp)
	ensureDefaultServiceAccount(t, cp, "kube-system")
	c := harness.StartNodeRuntimeT(t)
	proxy, err := criproxy.Start(filepath.Join(c.Where().Dir, "kubelet-cri-proxy.sock"), c.Where().Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	n := kubeletNode{cp: cp, c: c, k: harness.StartKubeletViaT(t, cp, c, proxy.Endpoint, uniqueNode("static"))}
	image := hangwatchImageTar(t) // built once, before the import's deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.c.ImportImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	n.cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	configDir := t.TempDir()
	writeStaticPodConfig(t, configDir, n.k)
	writeStaticPod(t, n, configDir)
	return staticPodNode{kubeletNode: n, podName: "hangwatch-" + n.k.Node, proxy: proxy, scrapeToken: applyScraperIdentity(t, cp)}
}

// waitHealthy waits for hangwatch's four conditions to be False on the
// Node and checks it sent no Warning while starting.
func (n staticPodNode) waitHealthy(t *testing.T) {
	t.Helper()
	started := time.Now()
	n.waitNodeCond(t, 2*time.Minute, "RuntimeHung", condIs(corev1.ConditionFalse, "RuntimeResponsive"))
	for _, c := range []string{"KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy"} {
		n.waitNodeCond(t, 30*time.Second, c, condIs(corev1.ConditionFalse, ""))
	}
	t.Logf("static pod hangwatch wrote its conditions False %v after the manifest", time.Since(started).Round(time.Millisecond))
	n.assertNotShared(t)
	for _, e := range nodeEvents(t, n.cp, n.k.Node) {
		if e.Source.Component == "hangwatch" && e.Type == corev1.EventTypeWarning {
			t.Errorf("a healthy node starting got a Warning from hangwatch: %s %s", e.Reason, e.Message)
		}
	}
}

// assertNotShared reads the Node's managedFields as hangwatch does: the
// real kubelet, which patches the whole status, must not count as another
// writer of hangwatch's conditions, or hangwatch would leave them. (The
// harness's API server records no field managers for a Node the kubelet
// created, so here this holds trivially; TestSharedAndLeftBehindConditions
// covers a Node that has them.)
func (n staticPodNode) assertNotShared(t *testing.T) {
	t.Helper()
	node, err := n.cp.Admin.CoreV1().Nodes().Get(context.Background(), n.k.Node, metav1.GetOptions{})
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

func writeStaticPodConfig(t *testing.T, dir string, k *harness.Kubelet) {
	t.Helper()
	var cfg map[string]any
	readYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "static-pod", "config.yaml"), &cfg)
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
	rules, err := os.ReadFile(userFacilityRules(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel-rules.json"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg["kernel"].(map[string]any)["rules"] = []string{"/etc/hangwatch/kernel-rules.json"}
	writeYAML(t, filepath.Join(dir, "config.yaml"), cfg)
}

func writeStaticPod(t *testing.T, n kubeletNode, configDir string) {
	t.Helper()
	var pod corev1.Pod
	readYAML(t, filepath.Join(harness.ModuleRoot(), "manifests", "static-pod", "hangwatch.yaml"), &pod)
	kubeconfig, err := n.cp.NodeKubeconfig(n.k.Node)
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
	where := n.c.Where()
	other := filepath.Join(where.Dir, "other-runtime")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPaths := map[string]string{"runtime-socket-containerd": other, "runtime-socket-crio": other,
		"kubeconfig": kubeconfig, "kubelet-pki": n.cp.Dir, "config": configDir}
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
	c.Image, c.ImagePullPolicy = staticPodImage, corev1.PullNever
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == "kubelet-pki" { // the kubeconfig names its certificates by these paths
			c.VolumeMounts[i].MountPath = n.cp.Dir
		}
	}
	writeYAML(t, filepath.Join(n.k.StaticPodDir, "hangwatch.yaml"), pod)
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitNodeCond polls the Node until its condition condType satisfies ok,
// and returns when that was first seen; it fails the test after limit,
// with what the static pod is doing.
func (n staticPodNode) waitNodeCond(t *testing.T, limit time.Duration, condType string, ok func(*corev1.NodeCondition) bool) time.Time {
	t.Helper()
	_, seen, err := pollNode(t, n.cp, limit, n.k.Node, condType, ok, harness.Every(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%v: %+v\n%s", err, nodeCond(t, n.cp, n.k.Node, condType), n.diagnose(t))
	}
	return seen
}

// diagnose tells what the static pod is doing: the mirror pod's status and
// the container's log.
func (n staticPodNode) diagnose(t *testing.T) string {
	var b strings.Builder
	p, err := n.cp.Admin.CoreV1().Pods("kube-system").Get(context.Background(), n.podName, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "mirror pod: %v\n", err)
	} else {
		data, _ := yaml.Marshal(p.Status.ContainerStatuses)
		fmt.Fprintf(&b, "mirror pod phase %s:\n%s", p.Status.Phase, data)
	}
	logs, _ := filepath.Glob(filepath.Join(n.k.Dir, "logs", "kube-system_"+n.podName+"_*", "hangwatch", "*.log"))
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

func condIs(status corev1.ConditionStatus, reason string) func(*corev1.NodeCondition) bool {
	return func(c *corev1.NodeCondition) bool {
		return c.Status == status && (reason == "" || c.Reason == reason)
	}
}

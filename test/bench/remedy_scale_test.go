package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/hangwatch/hangwatch/remedy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// The scale benchmark's fixed parts.
const (
	scaleWorkers     = 16               // parallel writers for the set-up and the clean-up
	scaleImages      = 40               // status.images entries on each Node, two names each
	scaleQuietWindow = 60 * time.Second // the request-rate windows
)

// TestRemedyScaleBenchmark runs hangwatch-remedy, with the permissions its
// manifests give, against one kube-apiserver holding N Nodes the size of
// real ones (HANGWATCH_REMEDY_SCALE=N, 5000 by default; a benchmark: go
// test/bench, hack/bench-remedy-scale.sh): 1% of them with
// RuntimeHung True as hangwatch writes it. It records (package
// measurements) how long the controller takes to its first taint
// and to the last of the sick nodes, how fast it reacts to one more on a
// warm cache, its memory and CPU, and the requests it sends the API server
// while nothing changes. A benchmark: the figures are logged, not bounded.
func TestRemedyScaleBenchmark(t *testing.T) {
	n := remedyScale(t)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	admin := unthrottledAdmin(t, cp)
	ctx := context.Background()

	label := hangwatch.UniqueNode("remedy-scale")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-n%05d", label, i)
	}
	t.Cleanup(func() { deleteScaleNodes(t, admin, names) }) // after the controller stops (cleanups run last first)

	// N Nodes, each with RuntimeHung False written as hangwatch writes it.
	began := time.Now()
	if err := inParallel(n, scaleWorkers, func(i int) error {
		if _, err := admin.CoreV1().Nodes().Create(ctx, scaleNode(names[i], label, i), metav1.CreateOptions{}); err != nil {
			return err
		}
		return writeRuntimeHung(ctx, admin, names[i], corev1.ConditionFalse)
	}); err != nil {
		t.Fatalf("creating %d Nodes: %v", n, err)
	}
	harness.Measure(t, "remedy_scale_setup", time.Since(began))
	checkScaleNode(t, admin, names[0])

	sick := map[string]bool{}
	for i := 0; i < n; i += 100 { // 1%, spread over the fleet
		sick[names[i]] = true
	}
	flip := names[1] // healthy until the reaction is timed

	// What the API server serves with nothing of ours running, for
	// comparison with the controller's steady window.
	baseline := apiserverRequests(t, cp, scaleQuietWindow)
	measurements.Record(t, "remedy_scale_baseline_apiserver_requests_per_second", baseline.resourceRate(), "requests/s",
		"nodes, pods, leases and events, every client, no controller", baseline.resources())

	if err := inParallel(len(sick), scaleWorkers, func(i int) error {
		return writeRuntimeHung(ctx, admin, names[i*100], corev1.ConditionTrue)
	}); err != nil {
		t.Fatalf("writing RuntimeHung True: %v", err)
	}
	taints := watchTaints(t, admin, label)
	// a fresh action budget: its Lease outlives a controller, and an
	// earlier test's actions would count against this one's
	err := admin.CoordinationV1().Leases("kube-system").Delete(ctx, "hangwatch-remedy-actions", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	policy := filepath.Join(t.TempDir(), "policy.yaml")
	hangwatch.WritePolicy(t, policy, label, "maxUnhealthy: 2%\nmaxActionsPerMinute: 100\n")
	before, err := cp.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hangwatch.RemedyBinary(t) // built before the clock starts (startRemedy builds it on first use)
	started := time.Now()
	p := hangwatch.StartRemedy(t, kc, policy, "hangwatch-remedy")
	pid := p.Cmd.Process.Pid
	t.Logf("%d Nodes (%d with RuntimeHung True); hangwatch-remedy started at %s, pid %d", n, len(sick), started.Format("15:04:05.000000"), pid)
	defer logLeadership(t, p.LogPath)

	healthz := strings.TrimSuffix(p.Metrics, "/metrics") + "/healthz"
	synced := harness.Eventually(t, 10*time.Minute, "the controller's node cache to sync", func() bool { return httpOK(healthz) })
	harness.Measure(t, "remedy_scale_cache_synced", synced)
	harness.Eventually(t, time.Minute, "the controller to lead", func() bool { return p.Metric("hangwatch_remedy_leader") == 1 })
	harness.Measure(t, "remedy_scale_leading", time.Since(started))
	harness.Eventually(t, 10*time.Minute, "a first taint", func() bool { return taints.count() > 0 })
	harness.Measure(t, "remedy_scale_first_taint", taints.first().Sub(started))
	harness.Eventually(t, 10*time.Minute, fmt.Sprintf("all %d sick Nodes tainted", len(sick)), func() bool { return taints.all(sick) })
	harness.Measure(t, "remedy_scale_all_sick_tainted", taints.last().Sub(started))
	after, err := cp.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	startup := requestsBetween(before, after, taints.last().Sub(started))
	measurements.Record(t, "remedy_scale_requests_until_all_tainted", startup.remedyCount(), "requests",
		"the controller's identity, from its start to its last taint", startup.flowSchemas())
	if extra := taints.except(sick); len(extra) > 0 {
		t.Errorf("tainted healthy Nodes: %v", extra)
	}

	// One more node goes sick: the reaction on a warm cache.
	if err := writeRuntimeHung(ctx, admin, flip, corev1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	harness.Eventually(t, 2*time.Minute, "the flipped Node tainted", func() bool { return !taints.when(flip).IsZero() })
	harness.Measure(t, "remedy_scale_reaction", taints.when(flip).Sub(written))
	done := `hangwatch_remedy_actions_total{action="taint",condition="RuntimeHung",result="done"}`
	if got := p.Metric(done); got != float64(len(sick)+1) {
		t.Errorf("%s %v, want %d", done, got, len(sick)+1)
	}

	// The steady window: nothing changes, only the controller runs.
	harness.Window(t, 5*time.Second, "the Event broadcaster's last writes to land before the window", harness.UnlessExited(p))
	remedyBefore := scrape(p.Metrics)
	cpuBefore, _ := harness.ProcUsage(t, pid)
	steady := apiserverRequests(t, cp, scaleQuietWindow, p)
	cpuAfter, mem := harness.ProcUsage(t, pid)
	rssKiB, hwmKiB := mem.RSS, mem.Peak
	remedyAfter := scrape(p.Metrics)
	measurements.Record(t, "remedy_scale_steady_requests_per_second", steady.remedyRate(), "requests/s",
		fmt.Sprintf("the controller's identity, over %v", steady.window.Round(100*time.Millisecond)), "by flow schema: "+steady.flowSchemas())
	measurements.Record(t, "remedy_scale_steady_apiserver_requests_per_second", steady.resourceRate(), "requests/s",
		"nodes, pods, leases and events, every client", steady.resources())
	if len(harness.SeriesOf(remedyAfter, "rest_client_requests_total")) > 0 {
		t.Logf("the controller's own rest_client_requests_total grew by %s", harness.SeriesGrowth(remedyBefore, remedyAfter, "rest_client_requests_total"))
	} else {
		t.Logf("the controller's /metrics has no rest_client_requests_total: its requests are counted on the API server")
	}
	measurements.Record(t, "remedy_scale_steady_cpu_percent", 100*(cpuAfter-cpuBefore).Seconds()/steady.window.Seconds(), "% of a core",
		fmt.Sprintf("over %v", steady.window.Round(100*time.Millisecond)))
	cpu, _ := harness.ProcUsage(t, pid)
	measurements.Record(t, "remedy_scale_vmrss_mib", float64(rssKiB)/1024, "MiB")
	measurements.Record(t, "remedy_scale_vmhwm_mib", float64(hwmKiB)/1024, "MiB", "peak VmHWM")
	measurements.Record(t, "remedy_scale_cpu_seconds", cpu.Seconds(), "s", "user+system", fmt.Sprintf("%v after its start", time.Since(started).Round(time.Second)))
	fleetWideTransition(t, cp, admin, p, policy, label, names)
}

// fleetWideTransition makes a fifth of the fleet sick at once under a
// policy that lets the controller act (maxUnhealthy 30%) with a budget of
// 10 actions a minute: the Nodes it reads fresh stay within the budget,
// and it keeps its lead.
func fleetWideTransition(t *testing.T, cp *harness.ControlPlane, admin kubernetes.Interface, p *hangwatch.Remedy, policy, label string, names []string) {
	t.Helper()
	ctx := context.Background()
	reloads := strings.Count(mustReadString(t, p.LogPath), "Reloaded the policy")
	hangwatch.WritePolicy(t, policy, label, "maxUnhealthy: 30%\nmaxActionsPerMinute: 10\n")
	harness.Eventually(t, time.Minute, "the controller to reload its policy", func() bool {
		return strings.Count(mustReadString(t, p.LogPath), "Reloaded the policy") > reloads
	}, harness.UnlessExited(p))
	var sick []string
	for i := 2; i < len(names); i += 5 {
		sick = append(sick, names[i])
	}
	if err := inParallel(len(sick), scaleWorkers, func(i int) error {
		return writeRuntimeHung(ctx, admin, sick[i], corev1.ConditionTrue)
	}); err != nil {
		t.Fatalf("writing RuntimeHung True on %d Nodes: %v", len(sick), err)
	}
	cpuBefore, _ := harness.ProcUsage(t, p.Cmd.Process.Pid)
	window := apiserverRequests(t, cp, scaleQuietWindow, p)
	cpuAfter, _ := harness.ProcUsage(t, p.Cmd.Process.Pid)
	gets := window.byResource["GET nodes"] // apiserver_request_total's verbs are upper-case
	measurements.Record(t, "remedy_scale_transition_node_gets", gets, "GETs",
		fmt.Sprintf("%d of %d Nodes sick, maxActionsPerMinute 10, over %v", len(sick), len(names), window.window.Round(100*time.Millisecond)))
	measurements.Record(t, "remedy_scale_transition_requests_per_second", window.remedyRate(), "requests/s", "by flow schema: "+window.flowSchemas())
	measurements.Record(t, "remedy_scale_transition_resource_requests", window.resourceRate()*window.window.Seconds(), "requests",
		"every client's nodes, pods, leases and events requests in the window", window.resources())
	measurements.Record(t, "remedy_scale_transition_cpu_percent", 100*(cpuAfter-cpuBefore).Seconds()/window.window.Seconds(), "% of a core")
	if limit := 10 * (window.window.Minutes() + 1); gets > limit {
		t.Errorf("%v fresh Node GETs in %v with a budget of 10 a minute, want at most %v", gets, window.window, limit)
	}
	if p.Metric("hangwatch_remedy_leader") != 1 || strings.Contains(mustReadString(t, p.LogPath), "lost the lead") {
		t.Error("the controller lost its lead during the fleet-wide transition")
	}
}

func mustReadString(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// remedyScale is the benchmark's Node count: HANGWATCH_REMEDY_SCALE, 5000
// by default.
func remedyScale(t *testing.T) int {
	t.Helper()
	v := os.Getenv("HANGWATCH_REMEDY_SCALE")
	if v == "" {
		return 5000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		t.Fatalf("HANGWATCH_REMEDY_SCALE=%q: want a count of at least 100 (1%% of them are sick)", v)
	}
	return n
}

// unthrottledAdmin is the admin identity without client-go's default
// limit of 5 requests a second (cp.Admin's), which would make the set-up's
// 2N writes take N/150 minutes; the API server's own limits still apply.
func unthrottledAdmin(t *testing.T, cp *harness.ControlPlane) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limiter
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// scaleNode is a Node the size of a real one: labels, addresses, capacity,
// node info and scaleImages images with a digest and a tag each (the
// controller's informer drops the images; its fresh read before an action
// does not).
func scaleNode(name, label string, i int) *corev1.Node {
	images := make([]corev1.ContainerImage, scaleImages)
	kinds := []string{"api", "worker", "sidecar", "proxy", "exporter"}
	for j := range images {
		repo := fmt.Sprintf("registry.example.internal/platform-team-%02d/%s-service-%02d", j%7, kinds[j%len(kinds)], j)
		sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", name, j))
		images[j] = corev1.ContainerImage{
			Names:     []string{repo + "@sha256:" + hex.EncodeToString(sum[:]), fmt.Sprintf("%s:v1.%d.%d", repo, j, i%10)},
			SizeBytes: int64(20_000_000 + j*1_234_567),
		}
	}
	zone := []string{"a", "b", "c"}[i%3]
	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"hangwatch.io/remedy-test":         label,
			"kubernetes.io/hostname":           name,
			"kubernetes.io/os":                 "linux",
			"kubernetes.io/arch":               "amd64",
			"node.kubernetes.io/instance-type": "m6i.2xlarge",
			"topology.kubernetes.io/region":    "eu-west-1",
			"topology.kubernetes.io/zone":      "eu-west-1" + zone,
			"node-role.example.com/worker":     "",
		}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), ProviderID: "aws:///eu-west-1" + zone + "/i-" + name},
		Status: corev1.NodeStatus{
			Capacity: resources, Allocatable: resources,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, 1+i%250)},
				{Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: hex.EncodeToString([]byte(name))[:32], KernelVersion: "6.1.0-28-cloud-amd64",
				OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.3.7", KubeletVersion: "v1.37.2",
				OperatingSystem: "linux", Architecture: "amd64"},
			Images: images,
		},
	}
}

// checkScaleNode makes sure the API server kept what scaleNode sent.
func checkScaleNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(node)
	if len(node.Status.Images) != scaleImages {
		t.Fatalf("node %s has %d images, want %d", name, len(node.Status.Images), scaleImages)
	}
	measurements.Record(t, "remedy_scale_node_json_bytes", float64(len(raw)), "bytes", fmt.Sprintf("each Node's JSON, %d images", len(node.Status.Images)))
}

// writeRuntimeHung writes RuntimeHung on a Node as hangwatch does: a
// status patch under its field manager, heartbeat now.
func writeRuntimeHung(ctx context.Context, cs kubernetes.Interface, name string, status corev1.ConditionStatus) error {
	now := time.Now()
	return hangwatch.WriteCondition(ctx, cs, name, "RuntimeHung", remedy.DefaultWriter, status, now, now)
}

// inParallel runs do(0..n-1) on workers goroutines; the first error stops
// the handing out of more work and is returned.
func inParallel(n, workers int, do func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for failed.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// deleteScaleNodes deletes the benchmark's Nodes in parallel.
func deleteScaleNodes(t *testing.T, cs kubernetes.Interface, names []string) {
	t.Helper()
	began := time.Now()
	var left atomic.Int64
	_ = inParallel(len(names), scaleWorkers, func(i int) error {
		err := cs.CoreV1().Nodes().Delete(context.Background(), names[i], metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			left.Add(1)
			t.Logf("deleting %s: %v", names[i], err)
		}
		return nil
	})
	t.Logf("deleted the %d Nodes in %v (%d not deleted)", len(names), time.Since(began).Round(100*time.Millisecond), left.Load())
}

// taintWatch is when each of the benchmark's Nodes was first seen with the
// controller's taint, from a watch on the API server (no polling of N
// Nodes to load it).
type taintWatch struct {
	mu sync.Mutex
	at map[string]time.Time
}

func watchTaints(t *testing.T, cs kubernetes.Interface, label string) *taintWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	selector := "hangwatch.io/remedy-test=" + label
	// a list of one item gives the current resourceVersion to watch from
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, nodeWatcher{cs: cs, selector: selector})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &taintWatch{at: map[string]time.Time{}}
	go func() {
		for ev := range rw.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || (ev.Type != watch.Modified && ev.Type != watch.Added) || !hasRemedyTaint(node) {
				continue
			}
			w.mu.Lock()
			if _, seen := w.at[node.Name]; !seen {
				w.at[node.Name] = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		rw.Stop()
		cancel()
	})
	return w
}

type nodeWatcher struct {
	cs       kubernetes.Interface
	selector string
}

func (w nodeWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.LabelSelector = w.selector
	return w.cs.CoreV1().Nodes().Watch(ctx, o)
}

func hasRemedyTaint(n *corev1.Node) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == remedy.TaintKey("RuntimeHung") && tn.Value == remedy.TaintValue {
			return true
		}
	}
	return false
}

func (w *taintWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.at)
}

func (w *taintWatch) when(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at[name]
}

func (w *taintWatch) first() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, at := range w.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

func (w *taintWatch) last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, at := range w.at {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// all: every one of names is tainted.
func (w *taintWatch) all(names map[string]bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range names {
		if _, ok := w.at[name]; !ok {
			return false
		}
	}
	return true
}

// except lists the tainted Nodes not among names.
func (w *taintWatch) except(names map[string]bool) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name := range w.at {
		if !names[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// requestCounts is how many requests the API server served in a window.
type requestCounts struct {
	window time.Duration
	// byResource: apiserver_request_total's growth for nodes, pods, leases
	// and events, by "verb resource[/subresource]", every client's.
	byResource map[string]float64
	// byFlowSchema: apiserver_flowcontrol_dispatched_requests_total's
	// growth by flow schema. Only the controller's identity (a
	// kube-system ServiceAccount) is not in "exempt": the admin and the
	// API server's own loopback client are system:masters.
	byFlowSchema map[string]float64
}

// apiserverRequests counts what the API server serves over window, doing
// nothing else meanwhile; the control plane and the processes watched
// must keep running.
func apiserverRequests(t *testing.T, cp *harness.ControlPlane, window time.Duration, watched ...harness.Watched) requestCounts {
	t.Helper()
	before, err := cp.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	harness.Window(t, window, "a quiet window of the API server", harness.UnlessExited(append(cp.Processes(), watched...)...))
	after, err := cp.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return requestsBetween(before, after, time.Since(began))
}

func requestsBetween(before, after string, window time.Duration) requestCounts {
	c := requestCounts{window: window, byResource: map[string]float64{}, byFlowSchema: map[string]float64{}}
	was := harness.SeriesOf(before, "apiserver_request_total")
	wasFS := harness.SeriesOf(before, "apiserver_flowcontrol_dispatched_requests_total")
	for _, smp := range harness.Scrape(after) {
		l := smp.Labels
		switch smp.Name {
		case "apiserver_request_total":
			switch l["resource"] {
			case "nodes", "pods", "leases", "events":
			default:
				continue
			}
			what := l["verb"] + " " + l["resource"]
			if l["subresource"] != "" {
				what += "/" + l["subresource"]
			}
			if d := smp.Value - was[smp.String()]; d > 0 {
				c.byResource[what] += d
			}
		case "apiserver_flowcontrol_dispatched_requests_total":
			if d := smp.Value - wasFS[smp.String()]; d > 0 {
				c.byFlowSchema[l["flow_schema"]] += d
			}
		}
	}
	return c
}

func (c requestCounts) remedyCount() float64 {
	sum := 0.0
	for fs, v := range c.byFlowSchema {
		if fs != "exempt" {
			sum += v
		}
	}
	return sum
}

func (c requestCounts) remedyRate() float64 { return c.remedyCount() / c.window.Seconds() }

func (c requestCounts) resourceRate() float64 {
	sum := 0.0
	for _, v := range c.byResource {
		sum += v
	}
	return sum / c.window.Seconds()
}

func (c requestCounts) resources() string { return joinCounts(c.byResource) }

// flowSchemas lists the controller's requests by flow schema.
func (c requestCounts) flowSchemas() string {
	ours := map[string]float64{}
	for fs, v := range c.byFlowSchema {
		if fs != "exempt" {
			ours[fs] = v
		}
	}
	return joinCounts(ours)
}

func joinCounts(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s %.0f", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// httpOK: a GET of url answers 200.
func httpOK(url string) bool {
	code, _, err := harness.Get(url, harness.Timeout(5*time.Second))
	return err == nil && code == http.StatusOK
}

// scrape reads a /metrics text; empty when it cannot.
func scrape(url string) string {
	_, body, err := harness.Get(url, harness.Timeout(10*time.Second))
	if err != nil {
		return ""
	}
	return body
}

// logLeadership logs the controller's lines up to its taking the lead, to
// tell where the time to its first decision went.
func logLeadership(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("the controller's log: %v", err)
		return
	}
	for i, line := range strings.Split(string(data), "\n") {
		if i == 40 {
			break
		}
		t.Logf("hangwatch-remedy: %s", line)
		if strings.Contains(line, "Leading:") {
			break
		}
	}
}

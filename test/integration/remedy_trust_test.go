package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/remedy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// heartbeats keeps rewriting conditions as a live hangwatch on a node with
// a skewed clock would, until stopped.
type heartbeats struct {
	stop chan struct{}
	done sync.WaitGroup
}

// beat rewrites RuntimeHung True on node i every 500 ms, its writer's times
// skewed by skew and its transition fixed at the first write.
func (h *heartbeats) beat(t *testing.T, f *fleet, i int, skew time.Duration) time.Time {
	t.Helper()
	first := time.Now()
	f.write(t, i, "RuntimeHung", "hangwatch", corev1.ConditionTrue, first.Add(skew), first.Add(skew))
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			// a failed write is a missed heartbeat, as on a real node
			_ = hangwatch.WriteCondition(context.Background(), f.cp.Admin, f.names[i], "RuntimeHung", "hangwatch", corev1.ConditionTrue,
				first.Add(skew), time.Now().Add(skew))
		}
	}()
	return first
}

func (h *heartbeats) halt() {
	close(h.stop)
	h.done.Wait()
}

// TestRemedyTimesConditionsOnItsOwnClock: nodes whose clocks run 10
// minutes behind and an hour ahead are tainted no sooner than taintAfter
// and drained no sooner than evictAfter after the controller saw them
// turn True; a node an hour ahead whose writer died is never acted on; and
// node-problem-detector's KernelDeadlock is left alone by default.
func TestRemedyTimesConditionsOnItsOwnClock(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	f := newFleet(t, cp, 4)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	body := fmt.Sprintf(`apiVersion: hangwatch.io/v1alpha1
kind: RemedyConfiguration
nodeSelector: hangwatch.io/remedy-test=%s
maxUnhealthy: 100%%
maxActionsPerMinute: 60
conditions:
- type: RuntimeHung
  taintAfter: 3s
  evictAfter: 8s
  clearAfter: 2s
- type: KernelDeadlock
  taintAfter: 0s
  clearAfter: 1m
`, f.label)
	if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// 2: an hour ahead, its writer dead (one write, never again)
	f.write(t, 2, "RuntimeHung", "hangwatch", corev1.ConditionTrue, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	f.write(t, 3, "KernelDeadlock", "node-problem-detector", corev1.ConditionTrue, time.Now(), time.Now())
	p := hangwatch.StartRemedy(t, kc, policy, "hangwatch-remedy")
	harness.Eventually(t, 30*time.Second, "the replica to lead", func() bool { return p.Metric("hangwatch_remedy_leader") == 1 })
	h := &heartbeats{stop: make(chan struct{})}
	defer h.halt()
	start := []time.Time{h.beat(t, f, 0, -10*time.Minute), h.beat(t, f, 1, time.Hour)}
	// when each skewed node was first seen tainted, then draining, after its first True write
	seen := [2][2]time.Duration{}
	harness.Eventually(t, time.Minute, "both skewed nodes tainted and drained", func() bool {
		tainted := f.tainted(t)
		for i := range seen {
			if seen[i][0] == 0 && containsInt(tainted, i) {
				seen[i][0] = time.Since(start[i])
			}
			if seen[i][1] == 0 && f.events(t, i, "RemedyEvicting") > 0 {
				seen[i][1] = time.Since(start[i])
			}
		}
		return seen[0][1] > 0 && seen[1][1] > 0
	})
	for i, s := range seen {
		harness.Measure(t, fmt.Sprintf("remedy_skewed_node_%d_taint", i), s[0])
		harness.Measure(t, fmt.Sprintf("remedy_skewed_node_%d_evict", i), s[1])
		if s[0] < 3*time.Second || s[1] < 8*time.Second {
			t.Errorf("node %d (skewed): tainted %v and drained %v after it turned True; taintAfter 3s, evictAfter 8s", i, s[0], s[1])
		}
	}
	if got := f.tainted(t); containsInt(got, 2) {
		t.Errorf("the node whose writer died an hour in its own future was tainted: %v", got)
	}
	n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), f.names[3], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == remedy.TaintKey("KernelDeadlock") {
			t.Errorf("node-problem-detector's KernelDeadlock was tainted on: %v", n.Spec.Taints)
		}
	}
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// liveOrFrozen lists the Nodes from the API server, but serves frozen ones
// as a lagging cache would.
type liveOrFrozen struct {
	f      *fleet
	mu     sync.Mutex
	frozen map[string]*corev1.Node
}

// Get serves a frozen node as frozen, another as the API server has it.
func (l *liveOrFrozen) Get(name string) (*corev1.Node, error) {
	l.mu.Lock()
	n := l.frozen[name]
	l.mu.Unlock()
	if n != nil {
		return n, nil
	}
	return l.f.cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

func (l *liveOrFrozen) List() ([]*corev1.Node, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*corev1.Node
	for _, name := range l.f.names {
		if n := l.frozen[name]; n != nil {
			out = append(out, n)
			continue
		}
		n, err := l.f.cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// TestRemedyEvictsOnlyWhatAControllerRecreates runs the controller in
// process against the real API server, with the remedy ServiceAccount's
// permissions and a fake clock: on a node evicted for RuntimeHung, the
// Deployment's pod is evicted, while the StatefulSet's pod, the pod with a
// ReadWriteOnce claim and the ownerless pod stay and an Event names them;
// and a node whose condition turned False after the cache read it is
// neither drained nor tainted again.
func TestRemedyEvictsOnlyWhatAControllerRecreates(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	hangwatch.EnsureDefaultServiceAccount(t, cp, "default")
	f := newFleet(t, cp, 2)
	for i := range f.names {
		f.set(t, i, corev1.ConditionTrue, time.Now())
	}
	pods := placePods(t, f)
	lister := &liveOrFrozen{f: f, frozen: map[string]*corev1.Node{}}
	clk := testclock.NewFakeClock(time.Now())
	rec := record.NewFakeRecorder(1000)
	p := remedy.DefaultPolicy()
	p.NodeSelector, p.MaxUnhealthy = "hangwatch.io/remedy-test="+f.label, intstr.FromString("100%")
	c := remedy.NewController(remedy.Options{Client: harness.ClientFor(t, kc), Nodes: lister, Policy: func() *remedy.Policy { return p },
		Recorder: rec, Metrics: remedy.NewMetrics(metrics.NewKubeRegistry()), Clock: clk})
	ctx := context.Background()
	c.Pass(ctx)
	if got := f.tainted(t); !sameInts(got, 0, 1) {
		t.Fatalf("first pass tainted %v, want both", got)
	}
	stale, err := lister.List()
	if err != nil {
		t.Fatal(err)
	}
	lister.mu.Lock()
	lister.frozen[f.names[1]] = stale[1] // the cache stops here for node 1
	lister.mu.Unlock()
	f.set(t, 1, corev1.ConditionFalse, time.Now())
	clk.Step(46 * time.Second)
	c.Pass(ctx)
	harness.Eventually(t, 30*time.Second, "the Deployment pod of node 0 evicted", func() bool { return terminating(cp, pods[0]["web"]) })
	for name, pod := range pods[0] {
		if name != "web" && terminating(cp, pod) {
			t.Errorf("node 0's %s pod was evicted", name)
		}
	}
	if terminating(cp, pods[1]["web"]) {
		t.Error("node 1's Deployment pod was evicted from a stale cache")
	}
	checkLeftAloneInStatus(t, kc, f, pods[0])
	want := "default/" + pods[0]["bare"] + " (no controller"
	if e := findEvent(rec, "RemedyLeftAlone"); !strings.Contains(e, want) || !strings.Contains(e, pods[0]["db"]+" (StatefulSet pod") ||
		!strings.Contains(e, pods[0]["cache"]+" (ReadWriteOnce volume claim") {
		t.Errorf("the left-alone Event %q lacks a pod", e)
	}
}

// checkLeftAloneInStatus runs `hangwatch-remedy status -o json` as the
// remedy identity: node 0, tainted with RuntimeHung True, is to be evicted,
// and the pods the policy leaves there are listed.
func checkLeftAloneInStatus(t *testing.T, kc string, f *fleet, pods map[string]string) {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: RemedyConfiguration\nnodeSelector: hangwatch.io/remedy-test=%s\nmaxUnhealthy: 100%%\n", f.label)
	if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code, err := harness.Run(hangwatch.RemedyBinary(t), "status", "--kubeconfig", kc, "--config", policy, "-o", "json")
	if err != nil || code != 0 {
		t.Fatalf("status: exit %d, %v\n%s", code, err, stderr)
	}
	var status struct {
		LeftAlone map[string][]remedy.LeftPod `json:"leftAlone"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, l := range status.LeftAlone[f.names[0]] {
		got[l.Pod] = true
	}
	for _, what := range []string{"db", "bare", "cache"} {
		if !got["default/"+pods[what]] {
			t.Errorf("status does not list %s as left alone on %s:\n%s", pods[what], f.names[0], out)
		}
	}
	if len(got) != 3 || len(status.LeftAlone) != 1 {
		t.Errorf("status lists more left-alone pods than node 0's three:\n%s", out)
	}
}

// placePods puts on each of f's nodes a Deployment's pod (web), a
// StatefulSet's (db), a Deployment's pod with a ReadWriteOnce claim
// (cache) and an ownerless one (bare); no kubelet runs them.
func placePods(t *testing.T, f *fleet) []map[string]string {
	t.Helper()
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: f.label + "-data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := f.cp.Admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: f.label, UID: types.UID(f.label + "-" + kind), Controller: ptr.To(true)}}
	}
	var out []map[string]string
	for _, node := range f.names {
		names := map[string]string{}
		for what, mod := range map[string]func(*corev1.Pod){
			"web":  func(p *corev1.Pod) { p.OwnerReferences = owner("ReplicaSet") },
			"db":   func(p *corev1.Pod) { p.OwnerReferences = owner("StatefulSet") },
			"bare": func(*corev1.Pod) {},
			"cache": func(p *corev1.Pod) {
				p.OwnerReferences = owner("ReplicaSet")
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}
			},
		} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + what, Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
			mod(pod)
			if _, err := f.cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names[what] = pod.Name
		}
		out = append(out, names)
	}
	t.Cleanup(func() {
		for _, names := range out {
			for _, name := range names {
				_ = f.cp.Admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
			}
		}
		_ = f.cp.Admin.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim.Name, metav1.DeleteOptions{})
	})
	return out
}

// terminating: the pod is gone or being deleted.
func terminating(cp *harness.ControlPlane, name string) bool {
	pod, err := cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return true
	}
	return pod.DeletionTimestamp != nil
}

// findEvent returns the first recorded Event of reason, or "".
func findEvent(rec *record.FakeRecorder, reason string) string {
	for {
		select {
		case e := <-rec.Events:
			if strings.Contains(e, " "+reason+" ") {
				return e
			}
		default:
			return ""
		}
	}
}

// TestRemedyLeaderKilledMidBurstKeepsTheBudget: with maxActionsPerMinute
// 3 and eight sick nodes, the leader taints 3 and is killed (SIGKILL); the
// replica that takes over reads the budget from its Lease and taints no
// more within the minute, then goes on.
func TestRemedyLeaderKilledMidBurstKeepsTheBudget(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	f := newFleet(t, cp, 8)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	hangwatch.WritePolicy(t, policy, f.label, "maxUnhealthy: 100%\nmaxActionsPerMinute: 3\n")
	first, second := startPair(t, kc, policy)
	for i := range f.names {
		f.set(t, i, corev1.ConditionTrue, time.Now())
	}
	harness.Eventually(t, 30*time.Second, "3 taints", func() bool { return len(f.tainted(t)) == 3 })
	burst := time.Now()
	if err := first.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "the second replica to lead", func() bool { return second.Metric("hangwatch_remedy_leader") == 1 })
	var tainted []int
	harness.Throughout(t, 55*time.Second-time.Since(burst), "at most 3 nodes tainted in the minute of the burst (maxActionsPerMinute 3)", func() bool {
		tainted = f.tainted(t)
		// a read that a slow API server ends after the window sees the next minute's actions
		return len(tainted) <= 3 || time.Since(burst) >= 55*time.Second
	}, harness.Every(500*time.Millisecond), harness.UnlessExited(second),
		harness.Explaining(func() string { return fmt.Sprint("tainted: ", tainted) }))
	took := harness.Eventually(t, 90*time.Second, "the new leader to go on", func() bool { return len(f.tainted(t)) > 3 })
	harness.Measure(t, "remedy_new_leader_next_taint_after_the_burst", 55*time.Second+took)
}

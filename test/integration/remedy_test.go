package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/remedy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// fleet is the test's Nodes, labelled so the policy selects only them.
type fleet struct {
	cp    *harness.ControlPlane
	label string
	names []string
}

// newFleet makes n Nodes, and a fresh action budget: the Lease that keeps
// it outlives a controller, so an earlier test's actions would count.
func newFleet(t *testing.T, cp *harness.ControlPlane, n int) *fleet {
	t.Helper()
	err := cp.Admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "hangwatch-remedy-actions", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	f := &fleet{cp: cp, label: hangwatch.UniqueNode("remedy")}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-n%02d", f.label, i)
		_, err := cp.Admin.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"hangwatch.io/remedy-test": f.label}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.names = append(f.names, name)
		f.set(t, i, corev1.ConditionFalse, time.Now())
	}
	return f
}

// set writes RuntimeHung on node i as hangwatch would, heartbeat at beat.
func (f *fleet) set(t *testing.T, i int, status corev1.ConditionStatus, beat time.Time) {
	t.Helper()
	f.write(t, i, "RuntimeHung", "hangwatch", status, time.Now(), beat)
}

// write writes condType on node i as manager, with the writer's times.
func (f *fleet) write(t *testing.T, i int, condType, manager string, status corev1.ConditionStatus, transition, beat time.Time) {
	t.Helper()
	if err := hangwatch.WriteCondition(context.Background(), f.cp.Admin, f.names[i], condType, manager, status, transition, beat); err != nil {
		t.Fatal(err)
	}
}

// tainted lists the nodes (by index) with the controller's taint.
func (f *fleet) tainted(t *testing.T) []int {
	t.Helper()
	var out []int
	for i, name := range f.names {
		n, err := f.cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		own := 0
		for _, tn := range n.Spec.Taints {
			if tn.Key == remedy.TaintKey("RuntimeHung") && tn.Value == remedy.TaintValue {
				own++
			}
		}
		if own > 1 {
			t.Fatalf("node %s has %d copies of the taint", name, own)
		}
		if own == 1 {
			out = append(out, i)
		}
	}
	return out
}

// events counts the Events of a reason on node i.
func (f *fleet) events(t *testing.T, i int, reason string) int32 {
	t.Helper()
	list, err := f.cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + f.names[i] + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range list.Items {
		n += max(e.Count, 1)
	}
	return n
}

func (f *fleet) annotate(t *testing.T, i int, key, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if _, err := f.cp.Admin.CoreV1().Nodes().Patch(context.Background(), f.names[i], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func sameInts(a []int, b ...int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestRemedyGuardsOnARealAPIServer runs hangwatch-remedy, with the
// permissions its manifests give, over 20 Nodes whose RuntimeHung an admin
// client writes as hangwatch would: maxUnhealthy holds every new taint
// while too many are sick, the rate limit spaces them, an opted-out node
// and a stale condition are never acted on, a pause holds everything, and
// a node that recovers is untainted after clearAfter.
func TestRemedyGuardsOnARealAPIServer(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	f := newFleet(t, cp, 20)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	guards := "maxUnhealthy: 5\nmaxActionsPerMinute: 3\n"
	hangwatch.WritePolicy(t, policy, f.label, guards)
	f.annotate(t, 7, remedy.OptOutAnnotation, "disabled")
	for _, i := range []int{0, 1, 2, 3, 4, 5, 7} {
		f.set(t, i, corev1.ConditionTrue, time.Now())
	}
	f.set(t, 6, corev1.ConditionTrue, time.Now().Add(-time.Hour)) // hangwatch gone from it: stale
	p := hangwatch.StartRemedy(t, kc, policy, "hangwatch-remedy")

	harness.Eventually(t, time.Minute, "maxUnhealthy to hold the taints back (an Event)", func() bool { return f.events(t, 0, "RemedyHeldBack") > 0 })
	if got := f.tainted(t); len(got) != 0 {
		t.Fatalf("7 of 20 sick with maxUnhealthy 5: tainted %v", got)
	}
	if v := p.Metric(`hangwatch_remedy_guard_active{guard="maxUnhealthy"}`); v != 1 {
		t.Errorf("guard gauge %v, want 1", v)
	}

	f.set(t, 4, corev1.ConditionFalse, time.Now())
	f.set(t, 5, corev1.ConditionFalse, time.Now()) // 5 sick: 0-3 and the opted-out 7
	took := harness.Eventually(t, 30*time.Second, "3 taints", func() bool { return len(f.tainted(t)) == 3 })
	harness.Measure(t, "remedy_first_taints_after_guard_released", took)
	fourth := harness.Eventually(t, 90*time.Second, "the 4th taint", func() bool { return len(f.tainted(t)) == 4 })
	harness.Measure(t, "remedy_fourth_taint_after_the_third", fourth)
	if fourth < 45*time.Second {
		t.Errorf("the 4th taint came %v after the 3rd; 3 a minute allows no 4th within a minute of the first", fourth)
	}
	if got := f.tainted(t); !sameInts(got, 0, 1, 2, 3) {
		t.Fatalf("tainted %v, want [0 1 2 3]: never the stale 6 nor the opted-out 7", got)
	}
	if n := f.events(t, 7, "RemedyTainted"); n != 0 {
		t.Errorf("opted-out node: %d taint Events", n)
	}

	hangwatch.WritePolicy(t, policy, f.label, guards+"paused: true\n")
	harness.Eventually(t, 30*time.Second, "the paused policy to load", func() bool { return logHas(p.LogPath, `"Reloaded the policy"`) })
	f.set(t, 8, corev1.ConditionTrue, time.Now())
	harness.Eventually(t, 30*time.Second, "the pause to hold n08's taint", func() bool {
		return p.Metric(`hangwatch_remedy_guard_active{guard="paused"}`) == 1
	})
	if got := f.tainted(t); !sameInts(got, 0, 1, 2, 3) {
		t.Fatalf("paused: tainted %v", got)
	}

	hangwatch.WritePolicy(t, policy, f.label, "maxUnhealthy: 6\nmaxActionsPerMinute: 60\n")
	harness.Eventually(t, 30*time.Second, "n08 tainted once unpaused", func() bool { return sameInts(f.tainted(t), 0, 1, 2, 3, 8) })
	f.set(t, 0, corev1.ConditionFalse, time.Now())
	healed := time.Now()
	harness.Eventually(t, 30*time.Second, "n00 untainted", func() bool { return sameInts(f.tainted(t), 1, 2, 3, 8) })
	if since := time.Since(healed); since < time.Second {
		t.Errorf("untainted %v after the recovery; clearAfter is 2s", since)
	}
	checkStatusTable(t, kc, policy, f)
}

// checkStatusTable runs `hangwatch-remedy status -o json` as the remedy
// identity and finds the fleet as the controller left it.
func checkStatusTable(t *testing.T, kubeconfig, policy string, f *fleet) {
	t.Helper()
	out, stderr, code, err := harness.Run(hangwatch.RemedyBinary(t), "status", "--kubeconfig", kubeconfig, "--config", policy, "-o", "json")
	if err != nil || code != 0 {
		t.Fatalf("status: exit %d, %v\n%s", code, err, stderr)
	}
	var status struct {
		Matching int `json:"matching"`
		Rows     []struct {
			Node, Condition, State string
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	states := map[string]string{}
	for _, r := range status.Rows {
		states[r.Node] = r.State
	}
	if status.Matching != 20 || states[f.names[1]] != remedy.StateTainted || states[f.names[0]] != remedy.StateHealthy ||
		states[f.names[6]] != remedy.StateStale {
		t.Errorf("status: %d matching, n00 %s, n01 %s, n06 %s\n%s", status.Matching, states[f.names[0]], states[f.names[1]], states[f.names[6]], out)
	}
}

// TestRemedyLeaderChangeNeitherLosesNorDoublesAnAction kills the leading
// replica (SIGKILL) as it taints: the other takes the Lease over, every
// sick node ends with one copy of the taint and at most one taint Event,
// and the new leader acts on what comes next.
func TestRemedyLeaderChangeNeitherLosesNorDoublesAnAction(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	f := newFleet(t, cp, 6)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	hangwatch.WritePolicy(t, policy, f.label, "maxUnhealthy: 100%\nmaxActionsPerMinute: 60\n")
	first, second := startPair(t, kc, policy)
	for i := 0; i < 4; i++ {
		f.set(t, i, corev1.ConditionTrue, time.Now())
	}
	harness.Eventually(t, 30*time.Second, "a first taint", func() bool { return len(f.tainted(t)) > 0 })
	if err := first.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	harness.Eventually(t, 30*time.Second, "the second replica to lead", func() bool { return second.Metric("hangwatch_remedy_leader") == 1 })
	harness.Measure(t, "remedy_leader_takeover_after_kill", time.Since(killed))
	harness.Eventually(t, 30*time.Second, "all 4 tainted", func() bool { return sameInts(f.tainted(t), 0, 1, 2, 3) })
	for i := 0; i < 4; i++ {
		if n := f.events(t, i, "RemedyTainted"); n > 1 {
			t.Errorf("node %d: %d taint Events; the new leader tainted it again", i, n)
		}
	}
	f.set(t, 4, corev1.ConditionTrue, time.Now())
	harness.Eventually(t, 30*time.Second, "the new leader to taint n04", func() bool { return sameInts(f.tainted(t), 0, 1, 2, 3, 4) })
}

// startPair starts two replicas on the Lease kube-system/hangwatch-remedy
// (the only one their Role lets them take): the first leads, the second
// serves as the standby.
func startPair(t *testing.T, kubeconfig, policy string) (first, second *hangwatch.Remedy) {
	t.Helper()
	first = hangwatch.StartRemedy(t, kubeconfig, policy, "hangwatch-remedy")
	harness.Eventually(t, 30*time.Second, "the first replica to lead", func() bool { return first.Metric("hangwatch_remedy_leader") == 1 })
	second = hangwatch.StartRemedy(t, kubeconfig, policy, "hangwatch-remedy")
	harness.Eventually(t, 30*time.Second, "the second replica to serve", func() bool { return second.Metric("hangwatch_remedy_leader") == 0 })
	return first, second
}

// TestRemedyMayChangeOnlyItsOwnTaints: the admission policy lets the
// remedy ServiceAccount add and remove its taint, and nothing else.
func TestRemedyMayChangeOnlyItsOwnTaints(t *testing.T) {
	harness.Parallel(t, harness.LaneRemedyBudget)
	cp := hangwatch.SharedControlPlane(t)
	kc := hangwatch.RemedyIdentity(t, cp)
	f := newFleet(t, cp, 1)
	cs := harness.ClientFor(t, kc)
	ctx := context.Background()
	patch := func(ops string) error {
		_, err := cs.CoreV1().Nodes().Patch(ctx, f.names[0], types.JSONPatchType, []byte(ops), metav1.PatchOptions{})
		return err
	}
	ours := fmt.Sprintf(`{"key":%q,"value":%q,"effect":"NoSchedule"}`, remedy.TaintKey("RuntimeHung"), remedy.TaintValue)
	// the API server's TaintNodesByCondition gave the new Node the not-ready
	// taint: the remedy identity may not remove it, so it appends
	addOurs := `[{"op":"add","path":"/spec/taints/-","value":` + ours + `}]`
	if err := patch(addOurs); err == nil || !strings.Contains(err.Error(), "only while the Node's matching condition is True") {
		t.Fatalf("adding its taint while RuntimeHung is False: %v, want a denial by the admission policy", err)
	}
	f.set(t, 0, corev1.ConditionTrue, time.Now())
	if err := patch(addOurs); err != nil {
		t.Fatalf("adding its own taint while RuntimeHung is True: %v", err)
	}
	// Ready is True on every healthy node: its name is no key of hangwatch's
	f.write(t, 0, "Ready", "kubelet", corev1.ConditionTrue, time.Now(), time.Now())
	if err := patch(`[{"op":"add","path":"/spec/taints/-","value":{"key":"hangwatch.io/ready","value":"hangwatch-remedy","effect":"NoSchedule"}}]`); err == nil ||
		!strings.Contains(err.Error(), "hangwatch-remedy may add or remove only its own taints") {
		t.Errorf("hangwatch.io/ready on a Ready node: %v, want a denial by the admission policy", err)
	}
	if err := patch(`[{"op":"add","path":"/spec/taints","value":[]}]`); err == nil {
		t.Error("the remedy identity removed the API server's not-ready taint")
	}
	for what, ops := range map[string]string{
		"a label":                  `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`,
		"unschedulable":            `[{"op":"add","path":"/spec/unschedulable","value":true}]`,
		"another taint":            `[{"op":"add","path":"/spec/taints/-","value":{"key":"example.com/x","effect":"NoSchedule"}}]`,
		"the out-of-service taint": `[{"op":"add","path":"/spec/taints/-","value":{"key":"node.kubernetes.io/out-of-service","value":"nodeshutdown","effect":"NoExecute"}}]`,
		"its taint as NoExecute":   `[{"op":"add","path":"/spec/taints/-","value":{"key":"hangwatch.io/kernel-deadlock","value":"hangwatch-remedy","effect":"NoExecute"}}]`,
	} {
		if err := patch(ops); err == nil || !strings.Contains(err.Error(), "hangwatch-remedy may") {
			t.Errorf("%s: %v, want a denial by the admission policy", what, err)
		}
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, f.names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := len(n.Spec.Taints) - 1
	if n.Spec.Taints[last].Key != remedy.TaintKey("RuntimeHung") {
		t.Fatalf("taints %v", n.Spec.Taints)
	}
	removeOurs := fmt.Sprintf(`[{"op":"remove","path":"/spec/taints/%d"}]`, last)
	if err := patch(removeOurs); err == nil || !strings.Contains(err.Error(), "remove it only while that condition is not True") {
		t.Fatalf("removing its taint while RuntimeHung is True: %v, want a denial by the admission policy", err)
	}
	f.set(t, 0, corev1.ConditionFalse, time.Now())
	if err := patch(removeOurs); err != nil {
		t.Fatalf("removing its own taint once RuntimeHung is False: %v", err)
	}
	// the write path's taint, tied to PodStartStuck alone
	stuckTaint := fmt.Sprintf(`[{"op":"add","path":"/spec/taints/-","value":{"key":%q,"value":%q,"effect":"NoSchedule"}}]`,
		remedy.TaintKey("PodStartStuck"), remedy.TaintValue)
	if err := patch(stuckTaint); err == nil || !strings.Contains(err.Error(), "only while the Node's matching condition is True") {
		t.Fatalf("adding %s with no PodStartStuck: %v, want a denial by the admission policy", remedy.TaintKey("PodStartStuck"), err)
	}
	f.write(t, 0, "PodStartStuck", remedy.DefaultWriter, corev1.ConditionTrue, time.Now(), time.Now())
	if err := patch(stuckTaint); err != nil {
		t.Fatalf("adding %s while PodStartStuck is True: %v", remedy.TaintKey("PodStartStuck"), err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, f.names[0], metav1.DeleteOptions{}); err == nil {
		t.Error("the remedy identity deleted a Node")
	}
}

func logHas(path, text string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), text)
}

package podstarts

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func pod(name string, ready corev1.ConditionStatus) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if ready != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: ready}}
	}
	return p
}

// asking is a log-directory check that says yes for the names in it:
// a pod's name, or pod/container.
type asking map[string]bool

func (a asking) asked(_, name, _, container string) bool {
	if container != "" {
		return a[name+"/"+container]
	}
	return a[name]
}

func newSynced(t *testing.T, asked asking, pods ...*corev1.Pod) (*Tracker, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
	tr := NewTracker(clk, asked.asked, nil)
	tr.Resync()
	for _, p := range pods {
		tr.Update(p)
	}
	tr.Synced()
	return tr, clk
}

func observe(t *testing.T, tr *Tracker) (waiting int, oldest float64, pod string, since float64) {
	t.Helper()
	obs, ok := tr.Observe(context.Background())
	if !ok {
		t.Fatal("no observation after a sync")
	}
	return obs.Waiting, obs.OldestWaitingSeconds, obs.OldestPod, obs.SinceSandboxStartedSeconds
}

// TestASandboxThatNeverStartsIsTimedFromWhenFirstSeen: the kubelet made
// the pod's log directory (it called RunPodSandbox) and its sandbox is
// not ready; the wait counts on hangwatch's clock, and so does the time
// since a sandbox last started. A start ends both.
func TestASandboxThatNeverStartsIsTimedFromWhenFirstSeen(t *testing.T) {
	tr, clk := newSynced(t, asking{"web-0": true}, pod("web-0", corev1.ConditionFalse), pod("ok", corev1.ConditionTrue))
	if w, _, p, _ := observe(t, tr); w != 1 || p != "default/web-0" {
		t.Fatalf("waiting %d (%s), want web-0", w, p)
	}
	clk.Step(50 * time.Second)
	if w, oldest, _, since := observe(t, tr); w != 1 || oldest != 50 || since != 50 {
		t.Fatalf("after 50s: waiting %d for %vs, %vs since a start; want 1, 50, 50", w, oldest, since)
	}
	tr.Update(pod("web-0", corev1.ConditionTrue))
	clk.Step(time.Second)
	if w, oldest, _, since := observe(t, tr); w != 0 || oldest != 0 || since != 1 {
		t.Fatalf("after its start: waiting %d for %vs, %vs since a start; want 0, 0, 1", w, oldest, since)
	}
}

// TestOnlyAPodTheKubeletAskedASandboxForWaits: a pod still waiting for a
// volume (no log directory yet), a terminal pod, one being deleted, and
// one whose kubelet does not report PodReadyToStartContainers do not wait
// on the runtime.
func TestOnlyAPodTheKubeletAskedASandboxForWaits(t *testing.T) {
	done := pod("done", corev1.ConditionFalse)
	done.Status.Phase = corev1.PodSucceeded
	deleting := pod("deleting", corev1.ConditionFalse)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tr, _ := newSynced(t, asking{"done": true, "deleting": true, "old-kubelet": true},
		pod("volume", corev1.ConditionFalse), done, deleting, pod("old-kubelet", ""))
	if w, _, p, _ := observe(t, tr); w != 0 {
		t.Fatalf("waiting %d (%s), want none", w, p)
	}
}

// TestNothingIsJudgedWhileTheStreamIsDown: before the first complete
// listing and after a break there is no observation (the condition holds
// its state); a new listing replaces the pods, and a pod still waiting
// keeps its wait.
func TestNothingIsJudgedWhileTheStreamIsDown(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
	tr := NewTracker(clk, asking{"web-0": true}.asked, nil)
	if _, ok := tr.Observe(context.Background()); ok {
		t.Fatal("an observation before any listing")
	}
	tr.Resync()
	tr.Update(pod("web-0", corev1.ConditionFalse))
	tr.Update(pod("gone", corev1.ConditionTrue))
	if _, ok := tr.Observe(context.Background()); ok {
		t.Fatal("an observation before the listing was complete")
	}
	tr.Synced()
	observe(t, tr)
	clk.Step(30 * time.Second)
	tr.Lost()
	if _, ok := tr.Observe(context.Background()); ok {
		t.Fatal("an observation with the stream down")
	}
	tr.Resync()
	tr.Update(pod("web-0", corev1.ConditionFalse))
	tr.Synced()
	clk.Step(10 * time.Second)
	if w, oldest, _, _ := observe(t, tr); w != 1 || oldest != 40 {
		t.Fatalf("after a new listing: waiting %d for %vs, want 1 for 40s", w, oldest)
	}
	if len(tr.pods) != 1 {
		t.Fatalf("pods after the new listing: %v", tr.pods)
	}
}

// TestAStartSeenInANewListingCounts: a pod that waited before a break and
// is ready in the next listing started its sandbox meanwhile.
func TestAStartSeenInANewListingCounts(t *testing.T) {
	tr, clk := newSynced(t, asking{"web-0": true}, pod("web-0", corev1.ConditionFalse))
	clk.Step(time.Minute)
	tr.Lost()
	tr.Resync()
	tr.Update(pod("web-0", corev1.ConditionTrue))
	tr.Synced()
	if _, _, _, since := observe(t, tr); since != 0 {
		t.Fatalf("%vs since a start, want 0", since)
	}
}

// TestTheOldestWaitNamesItsPodAndRuntimeClass: among pods waiting, the
// one waiting longest is named, with its RuntimeClass.
func TestTheOldestWaitNamesItsPodAndRuntimeClass(t *testing.T) {
	gpu := pod("gpu", corev1.ConditionFalse)
	class := "nvidia"
	gpu.Spec.RuntimeClassName = &class
	tr, clk := newSynced(t, asking{"gpu": true, "later": true}, gpu)
	observe(t, tr)
	clk.Step(5 * time.Second)
	tr.Update(pod("later", corev1.ConditionFalse))
	obs, _ := tr.Observe(context.Background())
	if obs.Waiting != 2 || obs.OldestPod != "default/gpu" || obs.OldestRuntimeClass != "nvidia" || obs.OldestWaitingSeconds != 5 {
		t.Fatalf("%+v", obs)
	}
	tr.Delete("uid-gpu")
	if obs, _ := tr.Observe(context.Background()); obs.Waiting != 1 || obs.OldestPod != "default/later" {
		t.Fatalf("after gpu's deletion: %+v", obs)
	}
}

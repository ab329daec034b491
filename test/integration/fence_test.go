package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"encoding/json"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
)

// TestFenceGuardsHoldBack runs the fence's guards on three real nodes, A
// and B opted in, C not, with maxUnhealthy out of the way:
//   - a 20 s freeze of A that thaws by itself: nothing is asked;
//   - B frozen with someone else's out-of-service taint, C frozen without
//     the opt-in, A frozen: only A is fenced; B is held back (another
//     fencer) and C is never asked;
//   - the other taint gone, B is held back by maxFencedNodes: 1.
func TestFenceGuardsHoldBack(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	fc := startFenceCluster(t, fenceOptions{nodes: 3, unlabelled: map[int]bool{2: true},
		policy: func(p map[string]any) { p["maxUnhealthy"] = "100%" }})
	for name, node := range map[string]string{"web": fc.a, "db": fc.b, "cache": fc.c} {
		statefulSet(t, fc.cp, name, node)
	}
	web := fc.runningOn(t, 2*time.Minute, "web-0", fc.a)
	fc.runningOn(t, 2*time.Minute, "db-0", fc.b)
	fc.runningOn(t, 2*time.Minute, "cache-0", fc.c)

	thaw := freeze(t, fc.nodes[fc.a].c)
	frozen := time.Now()
	harness.Eventually(t, time.Minute, "RuntimeHung True on A", fc.conditionIs(t, fc.a, "RuntimeHung", corev1.ConditionTrue))
	harness.Window(t, 20*time.Second-time.Since(frozen), "the short freeze")
	thaw()
	harness.Eventually(t, 2*time.Minute, "RuntimeHung False on A again", fc.conditionIs(t, fc.a, "RuntimeHung", corev1.ConditionFalse))
	// past fence.after (45 s) from the rise: nothing was asked meanwhile
	harness.Throughout(t, 60*time.Second-time.Since(frozen), "no fence request on A past fence.after", func() bool {
		return fc.nodeObject(t, fc.a).Annotations[fencing.RequestAnnotation] == ""
	})
	if ev := fc.fenceEvents(t, fc.a); ev != "" || fc.pod(t, "web-0").UID != web.UID {
		t.Fatalf("a 20 s freeze: fence Events %q on A, web-0 %s (was %s)", ev, describePod(fc.pod(t, "web-0")), web.UID)
	}

	freeze(t, fc.nodes[fc.b].c)
	fc.setTaints(t, fc.b, corev1.Taint{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	freeze(t, fc.nodes[fc.c].c)
	freeze(t, fc.nodes[fc.a].c)
	harness.Eventually(t, 2*time.Minute, "A attests the fence", fc.attested(t, fc.a))
	harness.Eventually(t, time.Minute, "web-0 made again (every other node is frozen: it stays Pending)", func() bool {
		p := fc.pod(t, "web-0")
		return p != nil && p.UID != web.UID
	})
	fc.heldBack(t, fc.b, "another fencer")
	fc.setTaints(t, fc.b)
	fc.heldBack(t, fc.b, "maxFencedNodes 1")
	for _, node := range []string{fc.b, fc.c} {
		if n := fc.nodeObject(t, node); n.Annotations[fencing.RequestAnnotation] != "" {
			t.Errorf("%s was asked to fence: %v", node, n.Annotations)
		}
	}
	if ev := fc.fenceEvents(t, fc.c); ev != "" {
		t.Errorf("C, not opted in: fence Events %s", ev)
	}
}

// TestFenceImpossibleAndNodeDryRun: a process of web-0 held in a real D
// state on A makes the fence impossible (attested so, withdrawn with
// FenceImpossible, nothing killed, web-0 stays); B's hangwatch in dry
// run tells which pods it would stop and stops none, and remedy's request
// times out.
func TestFenceImpossibleAndNodeDryRun(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	requireStuckDir(t)
	fc := startFenceCluster(t, fenceOptions{dryRun: map[int]bool{1: true},
		policy: func(p map[string]any) {
			p["maxUnhealthy"] = "100%"
			p["fence"].(map[string]any)["maxFencedNodes"] = 2
		}})
	statefulSet(t, fc.cp, "web", fc.a)
	statefulSet(t, fc.cp, "db", fc.b)
	web := fc.runningOn(t, 2*time.Minute, "web-0", fc.a)
	db := fc.runningOn(t, 2*time.Minute, "db-0", fc.b)
	stuckPid, release := fc.holdInDInside(t, fc.a, string(web.UID))

	freeze(t, fc.nodes[fc.a].c)
	freeze(t, fc.nodes[fc.b].c)
	harness.Eventually(t, 2*time.Minute, "A attests the fence impossible", fc.attested(t, fc.a))
	att, _, err := fencing.AttestationOf(fc.nodeObject(t, fc.a))
	if err != nil || att.Fenced() || !strings.Contains(att.Why, "uninterruptible") || !strings.Contains(att.Why, strconv.Itoa(stuckPid)) {
		t.Fatalf("A's attestation %+v (%v): want impossible, naming pid %d in D", att, err, stuckPid)
	}
	harness.Eventually(t, 30*time.Second, "remedy to withdraw A's request with FenceImpossible", func() bool {
		n := fc.nodeObject(t, fc.a)
		return n.Annotations[fencing.RequestAnnotation] == "" && strings.Contains(fc.fenceEvents(t, fc.a), "FenceImpossible")
	})
	if p := fc.pod(t, "web-0"); p == nil || p.UID != web.UID || len(harness.CgroupPids(fc.nodes[fc.a].k, string(web.UID))) < 2 {
		t.Errorf("web-0 after an impossible fence: %s; its processes %v", describePod(p), harness.CgroupPids(fc.nodes[fc.a].k, string(web.UID)))
	}
	release() // well within the kernel's hung-task timeout, which other tests' hangwatches would hear

	harness.Eventually(t, time.Minute, "B's dry run told", func() bool { return strings.Contains(fc.fenceEvents(t, fc.b), "FenceDryRun") })
	harness.Eventually(t, 2*time.Minute, "B's request timed out", func() bool { return strings.Contains(fc.fenceEvents(t, fc.b), "FenceTimedOut") })
	if _, ok, _ := fencing.AttestationOf(fc.nodeObject(t, fc.b)); ok || fc.pod(t, "db-0").UID != db.UID {
		t.Errorf("B's dry run attested or moved db-0: %s", describePod(fc.pod(t, "db-0")))
	}
	t.Logf("Events on A: %s; on B: %s", fc.fenceEvents(t, fc.a), fc.fenceEvents(t, fc.b))
}

// requireStuckDir skips without root and /dev/fuse (harness.StuckDir).
func requireStuckDir(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and /dev/fuse (harness.StuckDir): euid %d, %v", os.Geteuid(), err)
	}
}

// holdInDInside holds a process in D (harness.StuckDir) and moves it into
// the pod uid's cgroup on node: a pod process no SIGKILL can end. It is
// released by release, or when the test ends.
func (fc *fenceCluster) holdInDInside(t *testing.T, node, uid string) (pid int, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stuck, err := harness.NewStuckDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stuck.Release)
	pid, err = stuck.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := harness.PodCgroup(fc.nodes[node].k, "freezer", uid)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("move pid %d into %s: %v", pid, dir, err)
	}
	return pid, stuck.Release
}

// conditionIs tells whether node's condType has status.
func (fc *fenceCluster) conditionIs(t *testing.T, node, condType string, status corev1.ConditionStatus) func() bool {
	return func() bool { c := nodeCond(t, fc.cp, node, condType); return c != nil && c.Status == status }
}

// attested tells whether node carries an attestation.
func (fc *fenceCluster) attested(t *testing.T, node string) func() bool {
	return func() bool { _, ok, _ := fencing.AttestationOf(fc.nodeObject(t, node)); return ok }
}

// heldBack waits for remedy's RemedyHeldBack Event on node saying why.
func (fc *fenceCluster) heldBack(t *testing.T, node, why string) {
	t.Helper()
	harness.Eventually(t, time.Minute, "remedy to hold the fence of "+node+" back: "+why, func() bool {
		for _, e := range nodeEvents(t, fc.cp, node) {
			if e.Reason == "RemedyHeldBack" && strings.Contains(e.Message, why) {
				return true
			}
		}
		return false
	}, harness.Explaining(func() string { return fmt.Sprint(nodeEvents(t, fc.cp, node)) }))
}

// setTaints replaces node's taints but remedy's own with taints.
func (fc *fenceCluster) setTaints(t *testing.T, node string, taints ...corev1.Taint) {
	t.Helper()
	for _, tn := range fc.nodeObject(t, node).Spec.Taints {
		if strings.HasPrefix(tn.Key, "hangwatch.io/") {
			taints = append(taints, tn)
		}
	}
	patch := fmt.Sprintf(`{"spec":{"taints":%s}}`, mustJSON(t, taints))
	if _, err := fc.cp.Admin.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

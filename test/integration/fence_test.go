package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/stuckdir"
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
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{Nodes: 3, Unlabelled: map[int]bool{2: true},
		Policy: func(p map[string]any) { p["maxUnhealthy"] = "100%" }})
	for name, node := range map[string]string{"web": fc.A, "db": fc.B, "cache": fc.C} {
		cluster.StatefulSet(t, fc.CP, name, node)
	}
	web := fc.RunningOn(t, 2*time.Minute, "web-0", fc.A)
	fc.RunningOn(t, 2*time.Minute, "db-0", fc.B)
	fc.RunningOn(t, 2*time.Minute, "cache-0", fc.C)

	thaw := harness.Freeze(t, fc.Nodes[fc.A].C)
	frozen := time.Now()
	harness.Eventually(t, time.Minute, "RuntimeHung True on A", fc.ConditionIs(t, fc.A, "RuntimeHung", corev1.ConditionTrue))
	harness.Window(t, 20*time.Second-time.Since(frozen), "the short freeze")
	thaw()
	harness.Eventually(t, 2*time.Minute, "RuntimeHung False on A again", fc.ConditionIs(t, fc.A, "RuntimeHung", corev1.ConditionFalse))
	// past fence.after (45 s) from the rise: nothing was asked meanwhile
	harness.Throughout(t, 60*time.Second-time.Since(frozen), "no fence request on A past fence.after", func() bool {
		return fc.NodeObject(t, fc.A).Annotations[fencing.RequestAnnotation] == ""
	})
	if ev := fc.FenceEvents(t, fc.A); ev != "" || fc.Pod(t, "web-0").UID != web.UID {
		t.Fatalf("a 20 s freeze: fence Events %q on A, web-0 %s (was %s)", ev, cluster.DescribePod(fc.Pod(t, "web-0")), web.UID)
	}

	harness.Freeze(t, fc.Nodes[fc.B].C)
	fc.SetTaints(t, fc.B, corev1.Taint{Key: fencing.OutOfServiceTaint, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	harness.Freeze(t, fc.Nodes[fc.C].C)
	harness.Freeze(t, fc.Nodes[fc.A].C)
	harness.Eventually(t, 2*time.Minute, "A attests the fence", fc.Attested(t, fc.A))
	harness.Eventually(t, time.Minute, "web-0 made again (every other node is frozen: it stays Pending)", func() bool {
		p := fc.Pod(t, "web-0")
		return p != nil && p.UID != web.UID
	})
	fc.HeldBack(t, fc.B, "another fencer")
	fc.SetTaints(t, fc.B)
	fc.HeldBack(t, fc.B, "maxFencedNodes 1")
	for _, node := range []string{fc.B, fc.C} {
		if n := fc.NodeObject(t, node); n.Annotations[fencing.RequestAnnotation] != "" {
			t.Errorf("%s was asked to fence: %v", node, n.Annotations)
		}
	}
	if ev := fc.FenceEvents(t, fc.C); ev != "" {
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
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{DryRun: map[int]bool{1: true},
		Policy: func(p map[string]any) {
			p["maxUnhealthy"] = "100%"
			p["fence"].(map[string]any)["maxFencedNodes"] = 2
		}})
	cluster.StatefulSet(t, fc.CP, "web", fc.A)
	cluster.StatefulSet(t, fc.CP, "db", fc.B)
	web := fc.RunningOn(t, 2*time.Minute, "web-0", fc.A)
	db := fc.RunningOn(t, 2*time.Minute, "db-0", fc.B)
	stuckPid, release := holdInDInside(t, fc, fc.A, string(web.UID))

	harness.Freeze(t, fc.Nodes[fc.A].C)
	harness.Freeze(t, fc.Nodes[fc.B].C)
	harness.Eventually(t, 2*time.Minute, "A attests the fence impossible", fc.Attested(t, fc.A))
	att, _, err := fencing.AttestationOf(fc.NodeObject(t, fc.A))
	if err != nil || att.Fenced() || !strings.Contains(att.Why, "uninterruptible") || !strings.Contains(att.Why, strconv.Itoa(stuckPid)) {
		t.Fatalf("A's attestation %+v (%v): want impossible, naming pid %d in D", att, err, stuckPid)
	}
	harness.Eventually(t, 30*time.Second, "remedy to withdraw A's request with FenceImpossible", func() bool {
		n := fc.NodeObject(t, fc.A)
		return n.Annotations[fencing.RequestAnnotation] == "" && strings.Contains(fc.FenceEvents(t, fc.A), "FenceImpossible")
	})
	if p := fc.Pod(t, "web-0"); p == nil || p.UID != web.UID || len(kubelet.CgroupPids(fc.Nodes[fc.A].K, string(web.UID))) < 2 {
		t.Errorf("web-0 after an impossible fence: %s; its processes %v", cluster.DescribePod(p), kubelet.CgroupPids(fc.Nodes[fc.A].K, string(web.UID)))
	}
	release() // well within the kernel's hung-task timeout, which other tests' hangwatches would hear

	harness.Eventually(t, time.Minute, "B's dry run told", func() bool { return strings.Contains(fc.FenceEvents(t, fc.B), "FenceDryRun") })
	harness.Eventually(t, 2*time.Minute, "B's request timed out", func() bool { return strings.Contains(fc.FenceEvents(t, fc.B), "FenceTimedOut") })
	if _, ok, _ := fencing.AttestationOf(fc.NodeObject(t, fc.B)); ok || fc.Pod(t, "db-0").UID != db.UID {
		t.Errorf("B's dry run attested or moved db-0: %s", cluster.DescribePod(fc.Pod(t, "db-0")))
	}
	t.Logf("Events on A: %s; on B: %s", fc.FenceEvents(t, fc.A), fc.FenceEvents(t, fc.B))
}

// requireStuckDir skips without root and /dev/fuse (stuckdir.Dir).
func requireStuckDir(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and /dev/fuse (stuckdir.Dir): euid %d, %v", os.Geteuid(), err)
	}
}

// holdInDInside holds a process in D (stuckdir.Dir) and moves it into the
// pod uid's cgroup on node: a pod process no SIGKILL can end. It is
// released by release, or when the test ends.
func holdInDInside(t *testing.T, fc *cluster.FenceCluster, node, uid string) (pid int, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stuck, err := stuckdir.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stuck.Release)
	pid, err = stuck.HoldInD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := kubelet.PodCgroup(fc.Nodes[node].K, "freezer", uid)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("move pid %d into %s: %v", pid, dir, err)
	}
	return pid, stuck.Release
}

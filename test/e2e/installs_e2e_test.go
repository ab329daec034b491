package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// installs are the two ways hangwatch ships to a cluster.
var installs = []string{"kustomize", "helm"}

// TestInstallsRestartKeepsPods: hangwatch installed as shipped, from its
// image, as pods. A 30 s freeze of A's containerd is RuntimeHung on the
// Node, written by the agent's pod as its ServiceAccount under the shipped
// policies; the repair pod restarts containerd through the node's systemd;
// every pod on A is kept. Then the uninstall leaves nothing of hangwatch's
// on the Nodes.
func TestInstallsRestartKeepsPods(t *testing.T) {
	for _, how := range installs {
		t.Run(how, func(t *testing.T) {
			in := cluster.StartInstalls(t, how)
			in.WaitRunning(t, 3*time.Minute)
			cluster.StatefulSet(t, in.CP, "web", in.A)
			in.RunningOn(t, 2*time.Minute, "web-0", in.A)
			in.WaitRuntimeOldEnough(t)
			before := in.PodsOn(t, in.A)
			pid0 := in.RuntimePID(t)
			thaw := harness.Freeze(t, in.C)
			frozen := time.Now()
			harness.Eventually(t, time.Minute, "RuntimeHung True on A", in.ConditionIs(t, "RuntimeHung", corev1.ConditionTrue))
			harness.Measure(t, "installs_"+how+"_restart_runtime_hung_after_freeze", time.Since(frozen))
			in.WaitRestarted(t, pid0)
			harness.Measure(t, "installs_"+how+"_restart_restarted_after_freeze", time.Since(frozen))
			harness.Eventually(t, 2*time.Minute, "RuntimeHung False on A", in.ConditionIs(t, "RuntimeHung", corev1.ConditionFalse))
			harness.Measure(t, "installs_"+how+"_restart_runtime_hung_false_after_freeze", time.Since(frozen))
			thaw()
			if after := in.PodsOn(t, in.A); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("A's pods changed over the freeze and the restart:\nbefore %v\nafter  %v", before, after)
			}
			uninstall(t, in)
		})
	}
}

// uninstall removes hangwatch as it was installed (kubectl delete -k,
// helm uninstall), then runs `hangwatch-remedy uninstall`, and wants
// nothing of hangwatch's left on the Nodes: no taint of its, no
// out-of-service, no fence annotation, none of its conditions
// (docs/install.md, "Uninstall"). The time from the uninstall command to
// the Nodes clean is measured.
func uninstall(t *testing.T, in *cluster.Installs) {
	t.Helper()
	start := time.Now()
	left, conditions := in.UninstallAndList(t)
	harness.Measure(t, "installs_"+in.How+"_uninstall_done", time.Since(start))
	measurements.Record(t, "installs_"+in.How+"_uninstall_left_on_nodes", float64(len(left)+len(conditions)), "count", append(left, conditions...)...)
	if len(left)+len(conditions) > 0 {
		t.Errorf("after the uninstall, hangwatch's marks on the Nodes: %q", append(left, conditions...))
	}
}

// TestInstallsLadderToFence: hangwatch installed as shipped, with the
// fence opted in (A's label, remedy's policy). A's containerd freezes and
// every start of it wedges again: no restart cures it. The whole ladder
// runs from the pods: RuntimeHung, remedy's taint, one restart by the
// repair pod, repair gives up, the fence by the repair pod and the agent,
// out-of-service by the remedy pod, and the StatefulSet's web-0 Running on
// B. Each rung's time from the freeze is measured.
func TestInstallsLadderToFence(t *testing.T) {
	for _, how := range append(installs, "binaries") {
		t.Run(how, func(t *testing.T) { installedLadder(t, how, false) })
	}
}

// TestInstallsLadderToFenceWithAVolume: the same ladder, installed with
// kustomize, web-0 writing on a ReadWriteOnce volume of the harness's CSI
// driver, whose node instance on A runs in A's mount namespace as a node's
// CSI node plugin does. The fence from the repair pod has the driver
// unpublish and unstage the volume on A; web-0 runs on B writing on the
// same volume, and the old web-0 wrote nothing after the attestation.
func TestInstallsLadderToFenceWithAVolume(t *testing.T) {
	installedLadder(t, "kustomize", true)
}

// installedLadder runs the whole ladder on a cluster installed by how, web-0 with
// a volume when rwo; each rung is measured from the freeze.
func installedLadder(t *testing.T, how string, rwo bool) {
	in := cluster.StartInstalls(t, how)
	in.WaitRunning(t, 3*time.Minute)
	name, limit := how, 75*time.Second
	if rwo {
		name, limit = how+"_rwo", 90*time.Second
		in.StartCSI(t)
		cluster.WriterStatefulSet(t, in.CP, "web", in.A)
	} else {
		cluster.StatefulSet(t, in.CP, "web", in.A)
	}
	before := in.RunningOn(t, 2*time.Minute, "web-0", in.A)
	var log string
	if rwo {
		log = in.VolumeFile(t, "web-0", "log")
		harness.Eventually(t, time.Minute, "web-0 writing on its volume", func() bool { return len(cluster.LinesOf(t, log, string(before.UID))) > 3 })
	}
	in.WaitRuntimeOldEnough(t)
	in.WedgeRuntimeStarts(t)
	harness.Freeze(t, in.C)
	frozen := time.Now()
	rungs := in.WatchLadder(t, frozen, before.UID)
	hung, pleg := in.WatchCondition(t, "RuntimeHung"), in.WatchCondition(t, "PLEGUnhealthy")
	moved := in.WaitMovedToB(t, 3*time.Minute, rungs)
	onB := time.Since(frozen)
	// remedy's fence.after counts from RuntimeHung's transition, and waits
	// for PLEGUnhealthy's RelistStalled: what each did, for the log
	for name, w := range map[string]*cluster.ConditionWatch{"RuntimeHung": hung, "PLEGUnhealthy": pleg} {
		var seen []string
		for _, c := range w.Stop() {
			seen = append(seen, fmt.Sprintf("%s %s %s (transition %s) at %s", name, c.Status, c.Reason,
				c.Transition.Sub(frozen).Round(100*time.Millisecond), c.At.Sub(frozen).Round(100*time.Millisecond)))
		}
		t.Logf("after the freeze: %s", strings.Join(seen, "; "))
	}
	// the fence deletes web-0 before it releases anything and
	// attests: the StatefulSet's new web-0 may run on B first
	harness.Eventually(t, time.Minute, "every rung of the ladder", func() bool { return len(rungs.Missing()) == 0 },
		harness.Explaining(func() string { return fmt.Sprintf("missing %v", rungs.Missing()) }))
	rungs.Stop()
	for _, r := range rungs.Seen() {
		harness.Measure(t, "installs_"+name+"_ladder_"+r.Name+"_after_freeze", r.After)
	}
	harness.Measure(t, "installs_"+name+"_ladder_web0_on_b_after_freeze", onB)
	if moved.UID == before.UID {
		t.Fatalf("web-0 on B has A's UID %s", moved.UID)
	}
	if onB > limit {
		t.Errorf("web-0 Running on B %v after the freeze; want within %v", onB.Round(time.Millisecond), limit)
	}
	if rwo {
		checkVolumeMoved(t, in, log, before.UID, moved.UID, frozen.Add(rungs.After("attested")))
	}
	in.UnwedgeRuntime(t) // a node whose runtime is down cannot stop the pods an uninstall deletes
	if how != "binaries" {
		uninstall(t, in)
	}
}

// checkVolumeMoved wants the web-0 on B writing on the volume, the old one
// silent since the attestation, and A's unstage done before B's stage.
func checkVolumeMoved(t *testing.T, in *cluster.Installs, log string, old, moved types.UID, attested time.Time) {
	t.Helper()
	harness.Eventually(t, time.Minute, "the new web-0 writing on the volume", func() bool { return len(cluster.LinesOf(t, log, string(moved))) > 3 })
	for _, l := range cluster.LinesOf(t, log, string(old)) {
		if l.At.After(attested) {
			t.Errorf("the fenced web-0 wrote %q %v after the attestation was seen", l.Text, l.At.Sub(attested))
		}
	}
	unstaged, staged := lastCall(in.CSI.Calls(in.A), "NodeUnstageVolume"), lastCall(in.CSI.Calls(in.B), "NodeStageVolume")
	if unstaged.End.IsZero() || staged.Time.IsZero() || !unstaged.End.Before(staged.Time) {
		t.Errorf("A's unstage %+v, B's stage %+v: want the unstage done before the stage", unstaged, staged)
	}
}

// TestInstallsRolloutDuringAHang: both DaemonSets rolled to a new image
// tag while A's containerd is frozen. The old pods cannot be stopped
// while the runtime is frozen; the old repair pod restarts it, the
// rollout goes through, and RuntimeHung was True throughout the hang
// (never Unknown, never False before the runtime answered again). The
// new repair pod keeps the restart budget on the node: a second freeze
// is restarted with one restart fewer left.
func TestInstallsRolloutDuringAHang(t *testing.T) {
	for _, how := range installs {
		t.Run(how, func(t *testing.T) {
			in := cluster.StartInstalls(t, how)
			in.WaitRunning(t, 3*time.Minute)
			in.Tag(t, cluster.RolledImage)
			in.WaitRuntimeOldEnough(t)
			pid0 := in.RuntimePID(t)
			harness.Freeze(t, in.C)
			frozen := time.Now()
			rungs := in.WatchLadder(t, frozen, "")
			harness.Eventually(t, time.Minute, "RuntimeHung True on A", in.ConditionIs(t, "RuntimeHung", corev1.ConditionTrue))
			seen := in.WatchCondition(t, "RuntimeHung")
			in.Roll(t, cluster.RolledImage)
			in.WaitRestarted(t, pid0)
			in.WaitRolled(t, 3*time.Minute, cluster.RolledImage)
			harness.Measure(t, "installs_"+how+"_rollout_rolled_after_freeze", time.Since(frozen))
			harness.Eventually(t, time.Minute, "RuntimeHung False on A", in.ConditionIs(t, "RuntimeHung", corev1.ConditionFalse))
			rungs.Stop()
			// the restart as systemd started it (the rungs' poll sees it
			// later, and the restarted runtime may answer before)
			restarted, err := in.SD.MainStartedAt(context.Background(), containerd.Unit)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range seen.Stop() {
				if s.Status == corev1.ConditionUnknown || (s.Status == corev1.ConditionFalse && s.At.Before(restarted)) {
					t.Errorf("RuntimeHung %s (%s) %v after the freeze; want True until the restarted runtime answered (restarted %v after)",
						s.Status, s.Reason, s.At.Sub(frozen), restarted.Sub(frozen))
				}
			}
			in.WaitRuntimeOldEnough(t)
			pid1 := in.RuntimePID(t)
			harness.Freeze(t, in.C)
			in.WaitRestarted(t, pid1)
			harness.Eventually(t, time.Minute, "the new repair pod's budget: one restart left", func() bool {
				return in.AgentMetric(`hangwatch_repair_budget_remaining{target="runtime"}`) == 1
			})
		})
	}
}

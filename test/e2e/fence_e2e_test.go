package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/csi"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// TestFenceMovesAStatefulSetPod freezes node A's containerd for good (repair
// off) with hangwatch-remedy's fence on: A is asked to fence after
// fence.after, its hangwatch stops web-0's processes through its cgroup,
// deletes it as the node and attests, remedy adds the out-of-service
// taint, and web-0 runs on B. Thawed, A is unfenced once RuntimeHung is
// False for clearAfter, no fenced container runs on A again, and A takes
// new pods.
func TestFenceMovesAStatefulSetPod(t *testing.T) {
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{})
	cluster.StatefulSet(t, fc.CP, "web", fc.A)
	old := fc.RunningOn(t, 2*time.Minute, "web-0", fc.A)
	thaw := harness.Freeze(t, fc.Nodes[fc.A].C)
	frozen := time.Now()
	harness.Eventually(t, 2*time.Minute, "A attests the fence", func() bool {
		_, ok, _ := fencing.AttestationOf(fc.NodeObject(t, fc.A))
		return ok
	})
	harness.Measure(t, "e2e_fence_attested_after_freeze", time.Since(frozen))
	att, _, err := fencing.AttestationOf(fc.NodeObject(t, fc.A))
	if err != nil || !att.Fenced() || len(att.Pods) != 1 || att.Pods[0] != string(old.UID) {
		t.Fatalf("attestation %+v (%v), want web-0 (%s) fenced", att, err, old.UID)
	}
	moved := fc.RunningOn(t, 2*time.Minute, "web-0", fc.B)
	harness.Measure(t, "e2e_fence_sts_running_elsewhere_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "hangwatch's out-of-service taint on A", func() bool { return fc.OutOfService(t, fc.A) })
	harness.Measure(t, "e2e_fence_out_of_service_after_freeze", time.Since(frozen))
	t.Logf("web-0 was %s on A, is %s on B; Events on A: %s", old.UID, moved.UID, fc.FenceEvents(t, fc.A))

	thaw()
	thawed := time.Now()
	harness.Eventually(t, 4*time.Minute, "A unfenced", func() bool { return !fc.OutOfService(t, fc.A) })
	harness.Measure(t, "e2e_fence_unfenced_after_thaw", time.Since(thawed))
	if n := fc.NodeObject(t, fc.A); len(n.Annotations[fencing.RequestAnnotation]+n.Annotations[fencing.AttestedAnnotation]) != 0 {
		t.Errorf("the fence's annotations stay on A after it is unfenced: %v", n.Annotations)
	}
	fc.NoFencedContainerRuns(t, fc.A, string(old.UID))
	fc.TakesNewPods(t, fc.A)
}

// TestFenceBaseline is the same freeze on Kubernetes' own path (no
// hangwatch-remedy), with both StatefulSets on A (web without a volume, db
// with a ReadWriteOnce volume): where each pod is 10 minutes after the
// freeze.
func TestFenceBaseline(t *testing.T) {
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{NoRemedy: true, CSI: true})
	cluster.StatefulSet(t, fc.CP, "web", fc.A)
	cluster.WriterStatefulSet(t, fc.CP, "db", fc.A)
	old := map[string]*corev1.Pod{"web": fc.RunningOn(t, 3*time.Minute, "web-0", fc.A), "db": fc.RunningOn(t, 3*time.Minute, "db-0", fc.A)}
	harness.Freeze(t, fc.Nodes[fc.A].C)
	frozen := time.Now()
	harness.Eventually(t, 4*time.Minute, "A NotReady", func() bool { return hangwatch.NodeReady(t, fc.CP, fc.A).Status != corev1.ConditionTrue })
	harness.Measure(t, "e2e_fence_baseline_not_ready_after_freeze", time.Since(frozen))
	harness.Window(t, 10*time.Minute-time.Since(frozen), "10 minutes from the freeze")
	for _, name := range []string{"web", "db"} {
		p := fc.Pod(t, name+"-0")
		where := name + "-0: " + cluster.DescribePod(p)
		if p != nil && p.UID == old[name].UID {
			where = "the same " + name + "-0 on A, " + string(p.Status.Phase)
			if p.DeletionTimestamp != nil {
				where += ", Terminating since " + p.DeletionTimestamp.Sub(frozen).Round(time.Second).String() + " after the freeze"
			}
		}
		measurements.Duration(t, "e2e_fence_baseline_window_"+name, time.Since(frozen), where)
		if p != nil && p.Spec.NodeName == fc.B && cluster.PodRunning(*p) {
			t.Errorf("%s-0 moved to B without the fence: %s", name, where)
		}
	}
}

// TestFenceMovesAStatefulSetPodWithItsVolume: web-0 has a ReadWriteOnce
// claim of the harness's CSI driver (attach required) and appends
// "uid seq time" lines to a file on it, fsynced. A's containerd frozen
// for good, the fence stops web-0 and has the driver unpublish and
// unstage its volume on A; the out-of-service taint lets attach-detach
// detach it from A at once; web-0 runs on B with the volume. No line of
// the old pod is written after the attestation, and the volume was
// unstaged from A before it was staged on B.
func TestFenceMovesAStatefulSetPodWithItsVolume(t *testing.T) {
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{CSI: true})
	cluster.WriterStatefulSet(t, fc.CP, "web", fc.A)
	old := fc.RunningOn(t, 3*time.Minute, "web-0", fc.A)
	log := fc.VolumeFile(t, "web-0", "log")
	harness.Eventually(t, time.Minute, "web-0 writing on its volume", func() bool { return len(cluster.LinesOf(t, log, string(old.UID))) > 3 })
	harness.Freeze(t, fc.Nodes[fc.A].C)
	frozen := time.Now()
	harness.Eventually(t, 2*time.Minute, "A attests the fence", fc.Attested(t, fc.A))
	attested := time.Now()
	harness.Measure(t, "e2e_fence_rwo_attested_after_freeze", attested.Sub(frozen))
	if att, _, err := fencing.AttestationOf(fc.NodeObject(t, fc.A)); err != nil || !att.Fenced() {
		t.Fatalf("A's attestation %+v (%v): want fenced", att, err)
	}
	moved := fc.RunningOn(t, 3*time.Minute, "web-0", fc.B)
	harness.Measure(t, "e2e_fence_rwo_running_elsewhere_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "the new web-0 writing on the volume", func() bool { return len(cluster.LinesOf(t, log, string(moved.UID))) > 3 })
	for _, l := range cluster.LinesOf(t, log, string(old.UID)) {
		if l.At.After(attested) {
			t.Errorf("the fenced web-0 wrote %q %v after the attestation was seen", l.Text, l.At.Sub(attested))
		}
	}
	unstaged, staged := lastCall(fc.CSI.Calls(fc.A), "NodeUnstageVolume"), lastCall(fc.CSI.Calls(fc.B), "NodeStageVolume")
	if unstaged.End.IsZero() || staged.Time.IsZero() || !unstaged.End.Before(staged.Time) {
		t.Errorf("A's unstage %+v, B's stage %+v: want the unstage done before the stage", unstaged, staged)
	}
	t.Logf("A unstaged at %v, B staged at %v after the freeze; web-0 was %s on A, is %s on B", unstaged.End.Sub(frozen), staged.Time.Sub(frozen), old.UID, moved.UID)
}

// lastCall is the last successful call of method in calls.
func lastCall(calls []csi.Call, method string) csi.Call {
	var last csi.Call
	for _, c := range calls {
		if c.Method == method && c.Err == "" {
			last = c
		}
	}
	return last
}

//go:build e2e

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
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
	fc := startFenceCluster(t, fenceOptions{})
	statefulSet(t, fc.cp, "web", fc.a)
	old := fc.runningOn(t, 2*time.Minute, "web-0", fc.a)
	thaw := freeze(t, fc.nodes[fc.a].c)
	frozen := time.Now()
	harness.Eventually(t, 2*time.Minute, "A attests the fence", func() bool {
		_, ok, _ := fencing.AttestationOf(fc.nodeObject(t, fc.a))
		return ok
	})
	measure(t, "e2e_fence_attested_after_freeze", time.Since(frozen))
	att, _, err := fencing.AttestationOf(fc.nodeObject(t, fc.a))
	if err != nil || !att.Fenced() || len(att.Pods) != 1 || att.Pods[0] != string(old.UID) {
		t.Fatalf("attestation %+v (%v), want web-0 (%s) fenced", att, err, old.UID)
	}
	moved := fc.runningOn(t, 2*time.Minute, "web-0", fc.b)
	measure(t, "e2e_fence_sts_running_elsewhere_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "hangwatch's out-of-service taint on A", func() bool { return fc.outOfService(t, fc.a) })
	measure(t, "e2e_fence_out_of_service_after_freeze", time.Since(frozen))
	t.Logf("web-0 was %s on A, is %s on B; Events on A: %s", old.UID, moved.UID, fc.fenceEvents(t, fc.a))

	thaw()
	thawed := time.Now()
	harness.Eventually(t, 4*time.Minute, "A unfenced", func() bool { return !fc.outOfService(t, fc.a) })
	measure(t, "e2e_fence_unfenced_after_thaw", time.Since(thawed))
	if n := fc.nodeObject(t, fc.a); len(n.Annotations[fencing.RequestAnnotation]+n.Annotations[fencing.AttestedAnnotation]) != 0 {
		t.Errorf("the fence's annotations stay on A after it is unfenced: %v", n.Annotations)
	}
	fc.noFencedContainerRuns(t, fc.a, string(old.UID))
	fc.takesNewPods(t, fc.a)
}

// TestFenceBaseline is the same freeze on Kubernetes' own path (no
// hangwatch-remedy), with both StatefulSets on A (web without a volume, db
// with a ReadWriteOnce volume): where each pod is 10 minutes after the
// freeze.
func TestFenceBaseline(t *testing.T) {
	fc := startFenceCluster(t, fenceOptions{noRemedy: true, csi: true})
	statefulSet(t, fc.cp, "web", fc.a)
	writerStatefulSet(t, fc.cp, "db", fc.a)
	old := map[string]*corev1.Pod{"web": fc.runningOn(t, 3*time.Minute, "web-0", fc.a), "db": fc.runningOn(t, 3*time.Minute, "db-0", fc.a)}
	freeze(t, fc.nodes[fc.a].c)
	frozen := time.Now()
	harness.Eventually(t, 4*time.Minute, "A NotReady", func() bool { return nodeReady(t, fc.cp, fc.a).Status != corev1.ConditionTrue })
	measure(t, "e2e_fence_baseline_not_ready_after_freeze", time.Since(frozen))
	harness.Window(t, 10*time.Minute-time.Since(frozen), "10 minutes from the freeze")
	for _, name := range []string{"web", "db"} {
		p := fc.pod(t, name+"-0")
		where := name + "-0: " + describePod(p)
		if p != nil && p.UID == old[name].UID {
			where = "the same " + name + "-0 on A, " + string(p.Status.Phase)
			if p.DeletionTimestamp != nil {
				where += ", Terminating since " + p.DeletionTimestamp.Sub(frozen).Round(time.Second).String() + " after the freeze"
			}
		}
		measurements.Duration(t, "e2e_fence_baseline_window_"+name, time.Since(frozen), where)
		if p != nil && p.Spec.NodeName == fc.b && running(*p) {
			t.Errorf("%s-0 moved to B without the fence: %s", name, where)
		}
	}
}

// noFencedContainerRuns: the runtime of node, thawed, runs no container of
// the fenced pod uid.
func (fc *fenceCluster) noFencedContainerRuns(t *testing.T, node, uid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := fc.nodes[node].c.Runtime().ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Containers {
		if c.Labels["io.kubernetes.pod.uid"] == uid && c.State.String() == "CONTAINER_RUNNING" {
			t.Errorf("fenced pod %s's container %s runs again on %s", uid, c.Id, node)
		}
	}
}

// takesNewPods: a pod bound to node runs there.
func (fc *fenceCluster) takesNewPods(t *testing.T, node string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-fence", Namespace: "default"}, Spec: pauseTemplate(nil, nil).Spec}
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	if _, err := fc.cp.Admin.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 2*time.Minute, "a new pod Running on "+node, func() bool {
		got, err := fc.cp.Admin.CoreV1().Pods("default").Get(context.Background(), "after-fence", metav1.GetOptions{})
		return err == nil && running(*got)
	})
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
	fc := startFenceCluster(t, fenceOptions{csi: true})
	writerStatefulSet(t, fc.cp, "web", fc.a)
	old := fc.runningOn(t, 3*time.Minute, "web-0", fc.a)
	log := fc.volumeFile(t, "web-0", "log")
	harness.Eventually(t, time.Minute, "web-0 writing on its volume", func() bool { return len(linesOf(t, log, string(old.UID))) > 3 })
	freeze(t, fc.nodes[fc.a].c)
	frozen := time.Now()
	harness.Eventually(t, 2*time.Minute, "A attests the fence", fc.attested(t, fc.a))
	attested := time.Now()
	measure(t, "e2e_fence_rwo_attested_after_freeze", attested.Sub(frozen))
	if att, _, err := fencing.AttestationOf(fc.nodeObject(t, fc.a)); err != nil || !att.Fenced() {
		t.Fatalf("A's attestation %+v (%v): want fenced", att, err)
	}
	moved := fc.runningOn(t, 3*time.Minute, "web-0", fc.b)
	measure(t, "e2e_fence_rwo_running_elsewhere_after_freeze", time.Since(frozen))
	harness.Eventually(t, time.Minute, "the new web-0 writing on the volume", func() bool { return len(linesOf(t, log, string(moved.UID))) > 3 })
	for _, l := range linesOf(t, log, string(old.UID)) {
		if l.at.After(attested) {
			t.Errorf("the fenced web-0 wrote %q %v after the attestation was seen", l.text, l.at.Sub(attested))
		}
	}
	unstaged, staged := lastCall(fc.csi.Calls(fc.a), "NodeUnstageVolume"), lastCall(fc.csi.Calls(fc.b), "NodeStageVolume")
	if unstaged.End.IsZero() || staged.Time.IsZero() || !unstaged.End.Before(staged.Time) {
		t.Errorf("A's unstage %+v, B's stage %+v: want the unstage done before the stage", unstaged, staged)
	}
	t.Logf("A unstaged at %v, B staged at %v after the freeze; web-0 was %s on A, is %s on B", unstaged.End.Sub(frozen), staged.Time.Sub(frozen), old.UID, moved.UID)
}

// writerStatefulSet is statefulSet with a ReadWriteOnce claim "data" of
// the harness's CSI StorageClass, mounted at /data, where the pod writes
// /data/log (test/pause's writer).
func writerStatefulSet(t *testing.T, cp *harness.ControlPlane, name, prefer string) {
	t.Helper()
	statefulSetWith(t, cp, name, prefer, func(s *appsv1.StatefulSet) {
		c := &s.Spec.Template.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "WRITE_TO", Value: "/data/log"},
			{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(harness.CSIStorageClass),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}}
	})
}

// volumeFile is the host path of file on the volume of pod's claim "data".
func (fc *fenceCluster) volumeFile(t *testing.T, pod, file string) string {
	t.Helper()
	pvc, err := fc.cp.Admin.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data-"+pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := fc.cp.Admin.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil {
		t.Fatalf("the claim's volume: %v %v", pv, err)
	}
	return filepath.Join(fc.csi.DataDir, pv.Spec.CSI.VolumeHandle, file)
}

// writtenLine is one line of test/pause's writer.
type writtenLine struct {
	text string
	at   time.Time
}

// linesOf are the lines of path that pod uid wrote.
func linesOf(t *testing.T, path, uid string) []writtenLine {
	t.Helper()
	raw, _ := os.ReadFile(path)
	var out []writtenLine
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != uid {
			continue
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("a line of %s: %q", path, l)
		}
		out = append(out, writtenLine{text: l, at: time.Unix(0, ns)})
	}
	return out
}

// lastCall is the last successful call of method in calls.
func lastCall(calls []harness.CSICall, method string) harness.CSICall {
	var last harness.CSICall
	for _, c := range calls {
		if c.Method == method && c.Err == "" {
			last = c
		}
	}
	return last
}

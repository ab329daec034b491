//go:build e2e

package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// hangwatch-remedy): where web-0 is 10 minutes after the freeze.
func TestFenceBaseline(t *testing.T) {
	fc := startFenceCluster(t, fenceOptions{noRemedy: true})
	statefulSet(t, fc.cp, "web", fc.a)
	old := fc.runningOn(t, 2*time.Minute, "web-0", fc.a)
	freeze(t, fc.nodes[fc.a].c)
	frozen := time.Now()
	harness.Eventually(t, 4*time.Minute, "A NotReady", func() bool { return nodeReady(t, fc.cp, fc.a).Status != corev1.ConditionTrue })
	measure(t, "e2e_fence_baseline_not_ready_after_freeze", time.Since(frozen))
	harness.Window(t, 10*time.Minute-time.Since(frozen), "10 minutes from the freeze")
	p := fc.pod(t, "web-0")
	where := "web-0: " + describePod(p)
	if p != nil && p.UID == old.UID {
		where = "the same web-0 on A, " + string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			where += ", Terminating since " + p.DeletionTimestamp.Sub(frozen).Round(time.Second).String() + " after the freeze"
		}
	}
	measurements.Duration(t, "e2e_fence_baseline_window", time.Since(frozen), where)
	if p != nil && p.Spec.NodeName == fc.b && running(*p) {
		t.Errorf("web-0 moved to B without the fence: %s", where)
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

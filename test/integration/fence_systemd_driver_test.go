package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestFenceKillsAKubepodsSlicePod: node A runs containerd and the kubelet
// as units of a systemd of its own with the systemd cgroup driver, as
// most production nodes do, so web-0's cgroup is a slice systemd made
// over D-Bus, kubepods.slice/kubepods-besteffort.slice/
// kubepods-besteffort-pod<uid with _ for ->.slice. A's containerd frozen
// for good, A's hangwatch finds that slice, kills web-0's processes
// through it, finds it empty, deletes the pod as the node and attests;
// remedy adds the out-of-service taint and web-0 runs on B.
func TestFenceKillsAKubepodsSlicePod(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	systemd.Require(t)
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{SystemdDriver: map[int]bool{0: true}})
	a := fc.Nodes[fc.A]
	cluster.StatefulSet(t, fc.CP, "web", fc.A)
	old := fc.RunningOn(t, 2*time.Minute, "web-0", fc.A)
	uid := string(old.UID)
	slice := "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	var pids []int
	harness.Eventually(t, time.Minute, "web-0's processes in its slice", func() bool {
		pids = kubelet.CgroupPids(a.K, uid)
		return len(pids) > 0
	}, harness.Every(200*time.Millisecond))
	if dir := kubelet.PodCgroup(a.K, "freezer", uid); !strings.HasSuffix(dir, slice) {
		t.Fatalf("web-0's freezer cgroup %s, want one ending in %s", dir, slice)
	}

	harness.Freeze(t, a.C)
	frozen := time.Now()
	harness.Eventually(t, 2*time.Minute, "A attests the fence", fc.Attested(t, fc.A))
	att, _, err := fencing.AttestationOf(fc.NodeObject(t, fc.A))
	if err != nil || !att.Fenced() || len(att.Pods) != 1 || att.Pods[0] != uid {
		t.Fatalf("attestation %+v (%v), want web-0 (%s) fenced", att, err, uid)
	}
	if left := kubelet.CgroupPids(a.K, uid); len(left) > 0 {
		t.Errorf("web-0's slice still has processes %v after the attestation (it had %v)", left, pids)
	}
	t.Logf("A attested %v after the freeze: web-0's processes %v in %s killed", time.Since(frozen).Round(time.Second), pids, slice)
	moved := fc.RunningOn(t, 2*time.Minute, "web-0", fc.B)
	harness.Eventually(t, time.Minute, "hangwatch's out-of-service taint on A", func() bool { return fc.OutOfService(t, fc.A) })
	t.Logf("web-0 was %s on A, is %s on B; Events on A: %s", uid, moved.UID, fc.FenceEvents(t, fc.A))
}

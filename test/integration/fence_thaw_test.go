package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/internal/fencing"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/cluster"
)

// TestFenceKilledPodNeverRestartsOnAnEmptyDirectory: web-0 writes to a
// ReadWriteOnce volume of the harness's CSI driver on node A. A's
// containerd frozen for good, the fence kills web-0, has it deleted, and
// then cannot release its volume: A's node plugin hangs on
// NodeUnpublishVolume. The fence is attested impossible within the
// release's deadline, naming the call, with web-0 killed and deleted and
// no out-of-service taint. A thawed, the kubelet, which no longer has
// web-0, runs none of its containers again (none could start on the
// unmounted volume's empty directory), and the web-0 the StatefulSet made
// again writes on the volume itself, beside the old pod's lines.
func TestFenceKilledPodNeverRestartsOnAnEmptyDirectory(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	fc := cluster.StartFenceCluster(t, cluster.FenceOptions{CSI: true})
	cluster.WriterStatefulSet(t, fc.CP, "web", fc.A)
	old := fc.RunningOn(t, 3*time.Minute, "web-0", fc.A)
	log := fc.VolumeFile(t, "web-0", "log")
	harness.Eventually(t, time.Minute, "web-0 writing on its volume", func() bool { return len(cluster.LinesOf(t, log, string(old.UID))) > 3 })

	switchOn(t, fc.CSI, "hang-NodeUnpublishVolume")
	thaw := harness.Freeze(t, fc.Nodes[fc.A].C)
	harness.Eventually(t, 3*time.Minute, "A attests the fence", fc.Attested(t, fc.A))
	att, _, err := fencing.AttestationOf(fc.NodeObject(t, fc.A))
	if err != nil || att.Fenced() || !strings.Contains(att.Why, "NodeUnpublishVolume") || !strings.Contains(strings.Join(att.Pods, ","), string(old.UID)) {
		t.Fatalf("A's attestation %+v (%v): want impossible on NodeUnpublishVolume, naming web-0 %s killed and deleted", att, err, old.UID)
	}
	t.Logf("A attested: %s", att.Why)
	if p := fc.Pod(t, "web-0"); p != nil && p.UID == old.UID {
		t.Fatalf("the killed web-0 %s was not deleted: %s", old.UID, cluster.DescribePod(p))
	}
	if fc.OutOfService(t, fc.A) {
		t.Fatal("out of service after an impossible fence")
	}
	killedAt := time.Now()

	switchOff(t, fc.CSI, "hang-NodeUnpublishVolume")
	thaw()
	// the runtime, frozen when the kill came, reports the containers it
	// had as running until it has read their exits
	harness.Eventually(t, time.Minute, "the killed web-0's containers seen exited on A", func() bool { return runningOf(t, fc, string(old.UID)) == 0 })
	harness.Throughout(t, 30*time.Second, "no container of the killed web-0 runs again on A", func() bool { return runningOf(t, fc, string(old.UID)) == 0 })
	var moved string
	harness.Eventually(t, 4*time.Minute, "the new web-0 writing on the volume", func() bool {
		p := fc.Pod(t, "web-0")
		if p == nil || p.UID == old.UID || !cluster.PodRunning(*p) {
			return false
		}
		moved = p.Spec.NodeName
		return len(cluster.LinesOf(t, log, string(p.UID))) > 3
	})
	for _, l := range cluster.LinesOf(t, log, string(old.UID)) {
		if l.At.After(killedAt) {
			t.Errorf("the killed web-0 wrote %q %v after the attestation was seen", l.Text, l.At.Sub(killedAt))
		}
	}
	t.Logf("the new web-0 writes on the volume on %s, after the old pod's %d lines", moved, len(cluster.LinesOf(t, log, string(old.UID))))
}

// runningOf counts the containers of pod uid that node A's runtime runs.
func runningOf(t *testing.T, fc *cluster.FenceCluster, uid string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := fc.Nodes[fc.A].C.Runtime().ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range resp.Containers {
		if c.Labels["io.kubernetes.pod.uid"] == uid && c.State.String() == "CONTAINER_RUNNING" {
			n++
		}
	}
	return n
}

package integration

import (
	"slices"

	"golang.org/x/sys/unix"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/fence"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/csi"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// TestFenceVolumesRealCSI runs the fence's volume side (package fence,
// called directly, as repair's fencer calls it) on a real kubelet whose
// pod has a ReadWriteOnce volume of the harness's CSI driver, each volume
// staged as a tmpfs of its own (a device of its own, as a disk's). The
// driver's node plugin serves its socket where only its plugin
// registration says, not at <kubelet>/plugins/<driver>/csi.sock. With the
// runtime frozen and the pod's processes killed, and another mount
// namespace (unshare -m, kept by a sleeping process) holding the volume at
// a path of its own, outside the kubelet's directories:
//   - with the registrar stopped, no socket is found and the volume is
//     staged: ReleaseCSI is impossible, naming the staging mount (today's
//     code skipped the volume and left the staging mount);
//   - a node plugin that hangs on NodeUnpublishVolume makes ReleaseCSI
//     impossible within its 2 s call deadline;
//   - once it answers again, ReleaseCSI releases the volume through the
//     registered socket (unpublished and unstaged, seen unmounted);
//   - the path checks (HeldElsewhere, HeldUnder) find nothing, but
//     HeldAnywhere names the other namespace's pid and its mount;
//   - once that process ends, HeldAnywhere finds nothing held: the node's
//     disk behind the subPath is no false positive, and neither is a new
//     tmpfs mounted elsewhere on the node and given a released volume's
//     device number (the test mounts tmpfs until one gets it; tests
//     running beside it mount them all the time).
func TestFenceVolumesRealCSI(t *testing.T) {
	harness.Parallel(t)
	n := startFenceVolumeNode(t)
	rec := recordVolumes(t, n)
	staging := stagingOf(t, rec)
	hold := holdElsewhere(t, filepath.Join(n.m.KubeletRoot, "pods", n.uid), n.target, staging)
	harness.Freeze(t, n.c)
	killPod(t, n.uid)

	n.plugin.unregister(t)
	if _, err := n.m.ReleaseCSI(context.Background(), n.uid); !errors.Is(err, fence.ErrImpossible) || !strings.Contains(err.Error(), staging) {
		t.Fatalf("ReleaseCSI with no registration = %v; want ErrImpossible naming the staging mount %s", err, staging)
	} else {
		t.Logf("no registration, no conventional socket: %v", err)
	}
	n.plugin.register(t)
	releaseHanging(t, n)

	unstaged, err := n.m.ReleaseCSI(context.Background(), n.uid)
	if err != nil || len(unstaged) != 1 || unstaged[0] != staging {
		t.Fatalf("ReleaseCSI = %v, %v; want %s unstaged through the registered socket\n%s", unstaged, err, staging, callsOf(t, n.plugin.calls))
	}
	if unmounted, err := n.m.UnmountPod(withinSeconds(t, 10), n.uid); err != nil || len(unmounted) != 2 {
		t.Fatalf("UnmountPod = %v, %v; want the memory emptyDir and the subPath bind mount", unmounted, err)
	}
	byPath, err := n.m.HeldElsewhere(n.uid)
	if more, err2 := n.m.HeldUnder(unstaged); err == nil {
		byPath, err = append(byPath, more...), err2
	}
	if err != nil || len(byPath) != 0 {
		t.Errorf("the path checks = %v, %v; want nothing (the holder holds it at %s only)", byPath, err, hold.dir)
	}
	held, err := n.m.HeldAnywhere(withinSeconds(t, 30), rec)
	want := fmt.Sprintf("pid %d: %s (tmpfs ", hold.pid, hold.dir)
	if err != nil || len(held) != 1 || !strings.HasPrefix(held[0], want) {
		t.Fatalf("HeldAnywhere = %q, %v; want %q…", held, err, want)
	}
	t.Logf("held: %v", held)
	hold.stop()
	mountOnAReleasedDevice(t, rec.Identities)
	if held, err := n.m.HeldAnywhere(withinSeconds(t, 30), rec); err != nil || len(held) != 0 {
		t.Fatalf("with the holder gone, HeldAnywhere = %q, %v; want nothing", held, err)
	}
}

// mountOnAReleasedDevice mounts tmpfs in a temp dir until one is given the
// device number of one of ids (released: the kernel hands the lowest free
// one), at most 20 times, and leaves that one mounted until t ends.
func mountOnAReleasedDevice(t *testing.T, ids []fence.VolumeIdentity) {
	t.Helper()
	dir := t.TempDir()
	for range 20 {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount a tmpfs: %v", err)
		}
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(ids, func(id fence.VolumeIdentity) bool {
			return id.Major == unix.Major(st.Dev) && id.Minor == unix.Minor(st.Dev)
		}) {
			t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
			t.Logf("a new tmpfs at %s has a released volume's device %d:%d", dir, unix.Major(st.Dev), unix.Minor(st.Dev))
			return
		}
		if err := unix.Unmount(dir, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("no new tmpfs was given a released volume's device %v; the check below is the plain one", ids)
}

// withinSeconds is a context that ends n seconds from now, or with t.
func withinSeconds(t *testing.T, n int) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fenceVolumeNode is a real kubelet on its own containerd, the CSI driver
// with its node plugin registered elsewhere, and the running pod's UID
// and CSI volume's target; m is the fence's Mounts on it.
type fenceVolumeNode struct {
	c           *containerd.Containerd
	csi         *csi.Driver
	plugin      *elsewherePlugin
	uid, target string
	m           fence.Mounts
}

func startFenceVolumeNode(t *testing.T) *fenceVolumeNode {
	t.Helper()
	cp := harness.StartControlPlaneT(t)
	harness.StartControllerManagerT(t, cp, "persistentvolume-binder-controller", "persistentvolume-attach-detach-controller")
	n := &fenceVolumeNode{c: containerd.StartT(t, 0, 0)}
	k := kubelet.StartWithPodCgroupsT(t, cp, n.c, hangwatch.UniqueNode("fencevol"))
	n.csi = csi.StartT(t, cp)
	root := filepath.Join(k.Dir, "root")
	switchOn(t, n.csi, "stage-tmpfs")
	n.plugin = startNodePluginElsewhere(t, cp, n.csi, k.Node, root)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure:\n%s\n%s\n%s", cp.KubectlLog("get", "nodes,pods,pv,pvc,volumeattachments,csinodes", "-A", "-o", "wide"),
				cp.KubectlLog("get", "events", "-A", "--sort-by=.lastTimestamp"), n.csi.LogTails())
		}
	})
	pod, pv := runPodWithVolume(t, cp, k.Node)
	n.uid = string(pod.UID)
	n.target = filepath.Join(root, "pods", n.uid, "volumes", "kubernetes.io~csi", pv, "mount")
	n.m = fence.Mounts{Proc: "/proc", KubeletRoot: root, CallTimeout: 2 * time.Second}
	if _, err := os.Stat(filepath.Join(root, "plugins", csi.DriverName, "csi.sock")); err == nil {
		t.Fatal("the driver serves at the conventional path; this test needs it elsewhere")
	}
	return n
}

// recordVolumes records the pod's volumes: the CSI volume's tmpfs and the
// memory emptyDir's are its identities, the node's disk behind the
// subPath node-shared.
func recordVolumes(t *testing.T, n *fenceVolumeNode) fence.VolumeRecord {
	t.Helper()
	rec, err := n.m.RecordPodVolumes(n.uid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded: mounts %+v, identities %v, shared %+v", rec.Mounts, rec.Identities, rec.Shared)
	if len(rec.Identities) != 2 || rec.Identities[0].FSType != "tmpfs" || rec.Identities[1].FSType != "tmpfs" {
		t.Fatalf("identities %v; want the CSI volume's tmpfs and the memory emptyDir's", rec.Identities)
	}
	if len(rec.Shared) != 1 || !strings.Contains(rec.Shared[0].Why, "node-shared") {
		t.Fatalf("shared %+v; want the node's disk behind the subPath, node-shared", rec.Shared)
	}
	return rec
}

// releaseHanging has the node plugin hang on NodeUnpublishVolume:
// ReleaseCSI is impossible within its 2 s call deadline.
func releaseHanging(t *testing.T, n *fenceVolumeNode) {
	t.Helper()
	switchOn(t, n.csi, "hang-NodeUnpublishVolume")
	defer switchOff(t, n.csi, "hang-NodeUnpublishVolume")
	start := time.Now()
	_, err := n.m.ReleaseCSI(context.Background(), n.uid)
	took := time.Since(start)
	if !errors.Is(err, fence.ErrImpossible) || !strings.Contains(err.Error(), "NodeUnpublishVolume") || took > 10*time.Second {
		t.Fatalf("ReleaseCSI with NodeUnpublishVolume hanging = %v after %v; want ErrImpossible within the 2 s deadline", err, took)
	}
	t.Logf("a hanging NodeUnpublishVolume: impossible after %v: %v", took.Round(time.Millisecond), err)
}

// switchOn and switchOff turn a switch of the CSI driver (test/csidriver's
// switches.go) on and off.
func switchOn(t *testing.T, driver *csi.Driver, name string) {
	t.Helper()
	dir := filepath.Join(driver.DataDir, ".switches")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func switchOff(t *testing.T, driver *csi.Driver, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(driver.DataDir, ".switches", name)); err != nil {
		t.Fatal(err)
	}
}

package fence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// recordNode is a kubelet root whose pod aa-1 has, in the agent's mount
// table: a CSI volume of /dev/sdb (8:16) staged in the older
// pv/<pv>/globalmount layout, a memory emptyDir (tmpfs 0:50), a subPath
// bind of the root disk (8:1, also at /), an NFS volume (0:60 from
// srv:/export) and a configmap; and the node's own mounts beside them.
func recordNode(t *testing.T) (*csiNode, VolumeRecord) {
	t.Helper()
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	n.stage(t, "pv/pv-1")
	pod := filepath.Join(n.m.KubeletRoot, "pods", "aa-1")
	n.mount(t, pod+"/volumes/kubernetes.io~empty-dir/cache", "0:50 / ", "tmpfs tmpfs")
	n.mount(t, pod+"/volume-subpaths/scratch/app/0", "8:1 /var/lib/kubelet/pods/aa-1/volumes/kubernetes.io~empty-dir/scratch/sub ", "ext4 /dev/sda1")
	n.mount(t, pod+"/volumes/kubernetes.io~nfs/shared", "0:60 / ", "nfs4 srv:/export")
	n.mount(t, "/var/lib/kubelet", "8:1 /var/lib/kubelet ", "ext4 /dev/sda1")
	n.mount(t, "/proc", "0:21 / ", "proc proc")
	rec, err := n.m.RecordPodVolumes("aa-1")
	if err != nil {
		t.Fatal(err)
	}
	return n, rec
}

func TestRecordPodVolumes(t *testing.T) {
	n, rec := recordNode(t)
	var ids []string
	for _, id := range rec.Identities {
		ids = append(ids, id.String())
	}
	if want := []string{"ext4 8:16", "nfs4 0:60", "nfs4 srv:/export", "tmpfs 0:50"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("identities %q, want %q", ids, want)
	}
	if len(rec.Shared) != 1 || rec.Shared[0].String() != "ext4 8:1" || !strings.Contains(rec.Shared[0].Why, "node-shared") || !strings.Contains(rec.Shared[0].Why, "at /,") {
		t.Errorf("shared %+v; want the root disk 8:1, node-shared, mounted at /", rec.Shared)
	}
	var staging []VolumeMount
	vols := map[string]bool{}
	for _, vm := range rec.Mounts {
		vols[vm.Volume] = true
		if vm.Staging {
			staging = append(staging, vm)
		}
	}
	if len(staging) != 1 || staging[0].MountPoint != filepath.Join(n.m.KubeletRoot, csiPluginDir, "pv/pv-1/globalmount") || staging[0].Volume != "kubernetes.io~csi/pv-1" {
		t.Errorf("staging mounts %+v; want the old layout's globalmount of pv-1", staging)
	}
	for _, v := range []string{"kubernetes.io~csi/pv-1", "kubernetes.io~empty-dir/cache", "scratch", "kubernetes.io~nfs/shared"} {
		if !vols[v] {
			t.Errorf("no mount of volume %s in %+v", v, rec.Mounts)
		}
	}
}

// TestRecordPodVolumesSharedWithAnotherPod: a volume another pod of the
// node also mounts is still the volume, not node-shared: both pods' mounts
// must be gone before it is released.
func TestRecordPodVolumesSharedWithAnotherPod(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	n.addPod(t, "bb-2", "pv-1", true)
	n.stage(t, hashLayout("vol-1"))
	rec, err := n.m.RecordPodVolumes("aa-1")
	if err != nil || len(rec.Identities) != 1 || rec.Identities[0].String() != "ext4 8:16" || len(rec.Shared) != 0 {
		t.Fatalf("RecordPodVolumes = %+v, %v", rec, err)
	}
}

// heldNode is recordNode after the release: the agent's namespace (pid 1)
// keeps only the node's own mounts.
func heldNode(t *testing.T) (*csiNode, VolumeRecord) {
	t.Helper()
	n, rec := recordNode(t)
	host := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n22 1 8:1 /var/lib/kubelet /var/lib/kubelet rw - ext4 /dev/sda1 rw\n"
	fakeProcess(t, n.m.Proc, "1", "mnt:[4026531840]", host)
	return n, rec
}

// TestHeldAnywhereNothingLeft: the root disk, node-shared, is mounted in
// every namespace and is no false positive.
func TestHeldAnywhereNothingLeft(t *testing.T) {
	n, rec := heldNode(t)
	fakeProcess(t, n.m.Proc, "200", "mnt:[4026532001]", "1 0 8:1 /var/lib/containerd/x / rw - ext4 /dev/sda1 rw\n")
	held, err := n.m.HeldAnywhere(context.Background(), rec)
	if err != nil || len(held) != 0 {
		t.Fatalf("HeldAnywhere = %q, %v; want nothing", held, err)
	}
}

// TestHeldAnywhereAtAnotherPath: another mount namespace holds the CSI
// volume's device at /data, not under the kubelet's directories;
// HeldElsewhere (by path) misses it, HeldAnywhere names it.
func TestHeldAnywhereAtAnotherPath(t *testing.T) {
	n, rec := heldNode(t)
	fakeProcess(t, n.m.Proc, "300", "mnt:[4026532002]", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n7 1 8:16 /app /data rw - ext4 /dev/sdb rw\n")
	if old, err := n.m.HeldElsewhere("aa-1"); err != nil || len(old) != 0 {
		t.Fatalf("HeldElsewhere = %q, %v (the path check this test shows blind)", old, err)
	}
	held, err := n.m.HeldAnywhere(context.Background(), rec)
	if err != nil || !reflect.DeepEqual(held, []string{"pid 300: /data (ext4 8:16)"}) {
		t.Fatalf("HeldAnywhere = %q, %v; want pid 300's /data", held, err)
	}
}

// TestHeldAnywhereNFSSourceElsewhere: another namespace mounts the same
// export, through its own superblock (another device number), at
// /mnt/backup: found by its source.
func TestHeldAnywhereNFSSourceElsewhere(t *testing.T) {
	n, rec := heldNode(t)
	fakeProcess(t, n.m.Proc, "400", "mnt:[4026532003]", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n9 1 0:99 / /mnt/backup rw - nfs srv:/export/ rw\n")
	held, err := n.m.HeldAnywhere(context.Background(), rec)
	if err != nil || !reflect.DeepEqual(held, []string{"pid 400: /mnt/backup (nfs srv:/export/)"}) {
		t.Fatalf("HeldAnywhere = %q, %v; want pid 400's /mnt/backup", held, err)
	}
}

// TestHeldAnywherePinnedNamespace: a mount namespace pinned by a bind
// mount of its nsfs file, with no process in it, cannot be read: the
// proof is incomplete.
func TestHeldAnywherePinnedNamespace(t *testing.T) {
	n, rec := heldNode(t)
	fakeProcess(t, n.m.Proc, "500", "mnt:[4026532004]", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n9 1 0:4 mnt:[4026532999] /run/pinned rw - nsfs nsfs rw\n")
	_, err := n.m.HeldAnywhere(context.Background(), rec)
	if !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), "/run/pinned") {
		t.Fatalf("HeldAnywhere error = %v; want ErrImpossible naming /run/pinned", err)
	}
}

// TestHeldAnywhereUnreadable: a mount table that cannot be read is an
// error, never "nothing held".
func TestHeldAnywhereUnreadable(t *testing.T) {
	n, rec := heldNode(t)
	fakeProcess(t, n.m.Proc, "600", "mnt:[4026532005]", "garbage\n")
	if _, err := n.m.HeldAnywhere(context.Background(), rec); err == nil || !strings.Contains(err.Error(), "pid 600") {
		t.Fatalf("HeldAnywhere error = %v; want one naming pid 600", err)
	}
}

func TestHeldAnywhereEndsWithItsContext(t *testing.T) {
	n, rec := heldNode(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := n.m.HeldAnywhere(ctx, rec); !errors.Is(err, ErrImpossible) {
		t.Fatalf("HeldAnywhere error = %v; want ErrImpossible (deadline passed)", err)
	}
}

// TestRecordPodVolumesRefusesARawBlockVolume: a pod with a volumeDevices
// entry (a raw block volume, mapped as a device file, not mounted) is
// impossible to fence: nothing could show the device released.
func TestRecordPodVolumesRefusesARawBlockVolume(t *testing.T) {
	n := newCSINode(t, "plugins/"+testDriver+"/csi.sock")
	n.addPod(t, "aa-1", "pv-1", true)
	dev := filepath.Join(n.m.KubeletRoot, "pods", "aa-1", "volumeDevices", "kubernetes.io~csi", "pv-2")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := n.m.RecordPodVolumes("aa-1"); !errors.Is(err, ErrImpossible) || !strings.Contains(err.Error(), "raw block volume (kubernetes.io~csi/pv-2)") {
		t.Fatalf("RecordPodVolumes with a raw block volume = %v; want ErrImpossible naming it", err)
	}
}

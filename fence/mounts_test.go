package fence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	podUID = "5e0c6a1f-1111-4222-8333-444455556666"
	podDir = "/var/lib/kubelet/pods/" + podUID
)

// selfMountInfo is the agent's mount table: the pod's volumes (one stacked
// twice, one with a space in its name), a subpath, and mounts of other pods
// and of the pod outside its volumes.
const selfMountInfo = `1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
100 1 0:50 / ` + podDir + `/volumes/kubernetes.io~empty-dir/cache rw shared:2 - tmpfs tmpfs rw
101 1 8:16 / ` + podDir + `/volumes/kubernetes.io~csi/pvc-1/mount rw shared:5 master:3 - ext4 /dev/sdb rw
102 101 8:16 /sub ` + podDir + `/volume-subpaths/pvc-1/app/0 rw - ext4 /dev/sdb rw
103 1 0:52 / ` + podDir + `/volumes/kubernetes.io~configmap/my\040config rw - tmpfs tmpfs rw
104 1 0:53 / /var/lib/kubelet/pods/other/volumes/kubernetes.io~empty-dir/x rw - tmpfs tmpfs rw
105 1 0:54 / ` + podDir + `/etc-hosts rw - ext4 /dev/sda1 rw
106 1 0:55 / ` + podDir + `/volumes rw - tmpfs tmpfs rw
107 101 0:56 / ` + podDir + `/volumes/kubernetes.io~csi/pvc-1/mount/deeper rw - tmpfs tmpfs rw
108 100 0:57 / ` + podDir + `/volumes/kubernetes.io~empty-dir/cache rw - tmpfs tmpfs rw
109 1 0:58 / ` + podDir + `x/volumes/kubernetes.io~empty-dir/y rw - tmpfs tmpfs rw
`

// wantMounts is selfMountInfo's pod volume mounts, deepest first, the most
// recent first among equals.
var wantMounts = []string{
	podDir + "/volumes/kubernetes.io~csi/pvc-1/mount/deeper",
	podDir + "/volume-subpaths/pvc-1/app/0",
	podDir + "/volumes/kubernetes.io~csi/pvc-1/mount",
	podDir + "/volumes/kubernetes.io~empty-dir/cache",
	podDir + "/volumes/kubernetes.io~configmap/my config",
	podDir + "/volumes/kubernetes.io~empty-dir/cache",
}

func fakeMounts(t *testing.T) Mounts {
	proc := t.TempDir()
	writeTestFile(t, filepath.Join(proc, "self", "mountinfo"), selfMountInfo)
	return Mounts{Proc: proc, KubeletRoot: "/var/lib/kubelet/"}
}

func TestPodVolumeMounts(t *testing.T) {
	got, err := fakeMounts(t).PodVolumeMounts(podUID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantMounts) {
		t.Errorf("PodVolumeMounts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantMounts, "\n"))
	}
}

func TestPodVolumeMountsBadUID(t *testing.T) {
	m := fakeMounts(t)
	for _, uid := range []string{"", ".", "..", "../x", "a/b"} {
		if _, err := m.PodVolumeMounts(uid); err == nil {
			t.Errorf("PodVolumeMounts(%q) succeeded; want an error", uid)
		}
	}
}

func TestUnmountPod(t *testing.T) {
	m := fakeMounts(t)
	var calls []string
	m.Unmount = func(target string) error {
		calls = append(calls, target)
		if strings.HasSuffix(target, "/app/0") {
			return &os.PathError{Op: "umount", Path: target, Err: unix.EINVAL}
		}
		return nil
	}
	done, err := m.UnmountPod(context.Background(), podUID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, wantMounts) {
		t.Errorf("unmounted in order %v, want %v", calls, wantMounts)
	}
	want := append(wantMounts[:1:1], wantMounts[2:]...)
	if !reflect.DeepEqual(done, want) {
		t.Errorf("UnmountPod = %v, want %v (no already-gone mount)", done, want)
	}
}

func TestUnmountPodBusy(t *testing.T) {
	m := fakeMounts(t)
	var calls int
	m.Unmount = func(target string) error {
		calls++
		if strings.HasSuffix(target, "pvc-1/mount") {
			return unix.EBUSY
		}
		return nil
	}
	done, err := m.UnmountPod(context.Background(), podUID)
	if !errors.Is(err, ErrImpossible) || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), wantMounts[2]) {
		t.Fatalf("UnmountPod error = %v; want ErrImpossible, EBUSY naming %s", err, wantMounts[2])
	}
	if want := wantMounts[:2]; !reflect.DeepEqual(done, want) || calls != 3 {
		t.Errorf("UnmountPod = %v after %d calls; want %v after 3", done, calls, want)
	}
}

func TestUnmountPodOtherError(t *testing.T) {
	m := fakeMounts(t)
	m.Unmount = func(string) error { return unix.EPERM }
	_, err := m.UnmountPod(context.Background(), podUID)
	if !errors.Is(err, unix.EPERM) || errors.Is(err, ErrImpossible) {
		t.Fatalf("UnmountPod error = %v; want EPERM, not ErrImpossible", err)
	}
}

// fakeProcess makes proc/<pid> with a mount namespace link (none if ns is
// "") and a mount table (none if lines is "").
func fakeProcess(t *testing.T, proc, pid, ns, lines string) {
	t.Helper()
	dir := filepath.Join(proc, pid)
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ns != "" {
		if err := os.Symlink(ns, filepath.Join(dir, "ns", "mnt")); err != nil {
			t.Fatal(err)
		}
	}
	if lines != "" {
		writeTestFile(t, filepath.Join(dir, "mountinfo"), lines)
	}
}

func TestHeldElsewhere(t *testing.T) {
	m := fakeMounts(t)
	root := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
	vol := func(id, path string) string { return id + " 1 0:60 / " + podDir + path + " rw - tmpfs tmpfs rw\n" }
	fakeProcess(t, m.Proc, "100", "mnt:[4026531840]", root+vol("2", "/volumes/a/b"))
	fakeProcess(t, m.Proc, "101", "mnt:[4026531840]", root+vol("3", "/volumes/read/once"))
	fakeProcess(t, m.Proc, "200", "mnt:[4026532001]", root+vol("2", `/volume-subpaths/v\040w/c/0`))
	fakeProcess(t, m.Proc, "300", "", "")                 // gone before its ns was read
	fakeProcess(t, m.Proc, "301", "mnt:[4026532002]", "") // gone before its mounts were read
	fakeProcess(t, m.Proc, "302", "mnt:[4026532002]", root+vol("4", "/volumes/d/e"))
	fakeProcess(t, m.Proc, "400", "mnt:[4026532003]", root+"5 1 0:61 / /var/lib/kubelet/pods/other/volumes/x rw - tmpfs tmpfs rw\n")
	got, err := m.HeldElsewhere(podUID)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pid 100: " + podDir + "/volumes/a/b",
		"pid 200: " + podDir + "/volume-subpaths/v w/c/0",
		"pid 302: " + podDir + "/volumes/d/e",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HeldElsewhere =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestHeldElsewhereNone(t *testing.T) {
	m := fakeMounts(t)
	fakeProcess(t, m.Proc, "1", "mnt:[4026531840]", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n")
	got, err := m.HeldElsewhere(podUID)
	if err != nil || len(got) != 0 {
		t.Fatalf("HeldElsewhere = %v, %v; want none", got, err)
	}
}

func TestHeldElsewhereBadMountTable(t *testing.T) {
	m := fakeMounts(t)
	fakeProcess(t, m.Proc, "7", "mnt:[4026531840]", "garbage\n")
	if _, err := m.HeldElsewhere(podUID); err == nil || !strings.Contains(err.Error(), "pid 7") {
		t.Fatalf("HeldElsewhere error = %v; want one naming pid 7", err)
	}
}

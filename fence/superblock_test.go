package fence

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAReusedTmpfsDeviceIsNotTheVolume mounts a real tmpfs (the volume),
// records its identity, and finds it held; then unmounts it and mounts
// tmpfs until one is given the same anonymous device number: that one is
// not the volume, and HeldAnywhere finds nothing.
func TestAReusedTmpfsDeviceIsNotTheVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	volume, later := filepath.Join(dir, "volume"), filepath.Join(dir, "later")
	for _, d := range []string{volume, later} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	major, minor := mountTmpfs(t, volume)
	ids := withSuperblockIDs([]VolumeIdentity{{FSType: "tmpfs", Major: major, Minor: minor}},
		[]VolumeMount{{MountPoint: volume, FSType: "tmpfs", Major: major, Minor: minor}})
	if ids[0].FSID == 0 {
		t.Skip("this kernel reports no f_fsid for a tmpfs: the device number is all there is")
	}
	rec := VolumeRecord{Pod: "p", Identities: ids}
	m := Mounts{Proc: "/proc"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if held, err := m.HeldAnywhere(ctx, rec); err != nil || len(held) == 0 {
		t.Fatalf("with the volume mounted, HeldAnywhere = %q, %v; want it held", held, err)
	}
	unmount(t, volume)
	if !remountOnDevice(t, later, major, minor) {
		t.Skipf("no new tmpfs was given %d:%d again", major, minor)
	}
	if held, err := m.HeldAnywhere(ctx, rec); err != nil || len(held) != 0 {
		t.Fatalf("with another tmpfs given the volume's %d:%d, HeldAnywhere = %q, %v; want nothing", major, minor, held, err)
	}
}

// remountOnDevice mounts tmpfs at dir until one has device major:minor,
// 20 tries; it leaves that one mounted.
func remountOnDevice(t *testing.T, dir string, major, minor uint32) bool {
	t.Helper()
	for range 20 {
		if ma, mi := mountTmpfs(t, dir); ma == major && mi == minor {
			return true
		}
		unmount(t, dir)
	}
	return false
}

func mountTmpfs(t *testing.T, dir string) (uint32, uint32) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return unix.Major(st.Dev), unix.Minor(st.Dev)
}

func unmount(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
}

package fence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Mounts unmounts a killed pod's volumes and proves no mount namespace still
// holds them.
type Mounts struct {
	// Proc is the proc root ("/proc"); MountInfo of the agent itself is
	// Proc/self/mountinfo.
	Proc string
	// KubeletRoot is the kubelet's --root-dir, "/var/lib/kubelet".
	KubeletRoot string
	// Unmount unmounts one target; nil: unix.Unmount(target,
	// UMOUNT_NOFOLLOW) — never MNT_DETACH (no lazy unmount).
	Unmount func(target string) error
	// CallTimeout bounds each CSI node plugin and plugin registration
	// call (within the caller's context); 0: DefaultCallTimeout.
	CallTimeout time.Duration
}

// PodVolumeMounts lists the mount points (from Proc/self/mountinfo, field 5,
// with octal escapes like \040 decoded) under KubeletRoot/pods/<uid>/volumes/
// and KubeletRoot/pods/<uid>/volume-subpaths/, deepest first. Among mounts
// stacked on one point, the most recent comes first, and each appears as
// often as it is mounted.
func (m Mounts) PodVolumeMounts(uid string) ([]string, error) {
	prefixes, err := m.volumePrefixes(uid)
	if err != nil {
		return nil, err
	}
	entries, err := readMountInfo(filepath.Join(m.Proc, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("volume mounts of pod %s: %w", uid, err)
	}
	var points []string
	for _, e := range slices.Backward(entries) {
		if underAny(e.MountPoint, prefixes) {
			points = append(points, e.MountPoint)
		}
	}
	slices.SortStableFunc(points, func(a, b string) int {
		return cmp.Compare(strings.Count(b, "/"), strings.Count(a, "/"))
	})
	return points, nil
}

// UnmountPod unmounts each of the pod's volume mounts, deepest first, and
// returns the mount points it unmounted. A mount already gone (EINVAL,
// ENOENT) is fine; a busy one (EBUSY) stops it with an error wrapping
// ErrImpossible that names the mount point; so does any other failure,
// without ErrImpossible. An unmount that has not returned when ctx ends
// (umount2 on a dead NFS server or iSCSI target can wait in the kernel
// for ever) stops it too, with ErrImpossible when the deadline passed
// (see unmountWithin).
func (m Mounts) UnmountPod(ctx context.Context, uid string) ([]string, error) {
	points, err := m.PodVolumeMounts(uid)
	if err != nil {
		return nil, err
	}
	unmount := m.Unmount
	if unmount == nil {
		unmount = unmountNow
	}
	var done []string
	for _, p := range points {
		err := unmountWithin(ctx, unmount, p)
		switch {
		case err == nil:
			klog.V(2).InfoS("Fence unmounted a pod volume", "pod", uid, "mountPoint", p)
			done = append(done, p)
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			klog.V(3).InfoS("Fence found a pod volume already unmounted", "pod", uid, "mountPoint", p)
		case errors.Is(err, unix.EBUSY):
			return done, fmt.Errorf("unmount %s: %w: %w", p, ErrImpossible, err)
		default:
			return done, fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return done, nil
}

// unmountNow unmounts target at once or fails: no MNT_DETACH, and no
// following a symbolic link put in place of the mount point.
func unmountNow(target string) error {
	return unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
}

// volumePrefixes are the directories, each with a trailing slash, that the
// pod's volume mounts are under: as KubeletRoot is written and, where it
// differs, with its symbolic links resolved (the kernel's mount tables show
// resolved paths).
func (m Mounts) volumePrefixes(uid string) ([]string, error) {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return nil, fmt.Errorf("volume mounts of pod %q: not a pod UID", uid)
	}
	roots := []string{filepath.Clean(m.KubeletRoot)}
	if real, err := filepath.EvalSymlinks(roots[0]); err == nil && real != roots[0] {
		roots = append(roots, real)
	}
	var prefixes []string
	for _, root := range roots {
		pod := filepath.Join(root, "pods", uid)
		prefixes = append(prefixes, pod+"/volumes/", pod+"/volume-subpaths/")
	}
	return prefixes, nil
}

func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

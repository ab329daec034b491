package fence

import (
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// A tmpfs has no device of its own: the kernel hands it an anonymous
// device number (0:N) when it is mounted and takes the number back when
// its last mount goes, and the next tmpfs mounted anywhere on the node (a
// pod's projected volume, a sandbox's /dev/shm) may get the same number at
// once. After a release, a device identity alone would then find a
// stranger "held". Kernels that give each tmpfs a random UUID report it as
// statfs's f_fsid (seen on 6.18: three tmpfs mounted one after the other,
// each given 0:42, reported three f_fsid), which tells the two apart; on
// kernels that report 0 the device number is all there is, and a reused
// one is found held (the safe side: the fence refuses).

// superblockIDType is the one file system type whose f_fsid is read:
// statfs on a tmpfs never waits for a device or a server.
const superblockIDType = "tmpfs"

// superblockID is the f_fsid of the file system at path when that file
// system has device major:minor. It says whether path could be opened at
// all (known: a process's root may be closed to us, or the process gone),
// and whether the file system there has that device and an f_fsid (ok:
// otherwise another mount covers the path, or the kernel reports none).
// The path is opened O_PATH so that both answers are of one file system.
func superblockID(path string, major, minor uint32) (fsid uint64, known, ok bool) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false, false
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || unix.Major(st.Dev) != major || unix.Minor(st.Dev) != minor {
		return 0, true, false
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return 0, true, false
	}
	fsid = uint64(uint32(fs.Fsid.Val[0]))<<32 | uint64(uint32(fs.Fsid.Val[1]))
	return fsid, true, fsid != 0
}

// withSuperblockIDs fills the FSID of each tmpfs identity in ids from a
// mount of it in mounts (the recording namespace's own).
func withSuperblockIDs(ids []VolumeIdentity, mounts []VolumeMount) []VolumeIdentity {
	for i, id := range ids {
		if id.Source != "" || id.FSType != superblockIDType {
			continue
		}
		for _, vm := range mounts {
			if vm.FSType != id.FSType || vm.Major != id.Major || vm.Minor != id.Minor {
				continue
			}
			if fsid, _, ok := superblockID(vm.MountPoint, id.Major, id.Minor); ok {
				ids[i].FSID = fsid
				break
			}
		}
	}
	return ids
}

// anotherSuperblock says whether mount e, which the namespace of pids
// shows and which matches id by device, is known to be another file
// system that was given id's device number after the volume's: the file
// system at its mount point, seen from the root of the first of pids
// whose root opens to us, has that device and an f_fsid other than the
// one recorded. Anything less certain is the volume.
func (m Mounts) anotherSuperblock(pids []int, e mountEntry, id VolumeIdentity) bool {
	if id.FSID == 0 || id.Source != "" {
		return false
	}
	for _, pid := range pids {
		path := filepath.Join(m.Proc, strconv.Itoa(pid), "root", e.MountPoint)
		fsid, known, ok := superblockID(path, e.Major, e.Minor)
		if known {
			return ok && fsid != id.FSID
		}
	}
	return false
}

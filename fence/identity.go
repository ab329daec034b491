package fence

import (
	"fmt"
	"strings"
)

// VolumeIdentity is what names a volume's file system wherever it is
// mounted: its device (mountinfo's major:minor, which every mount of one
// file system shares, at any path, in any mount namespace) or, for a
// network file system, also its file system type and source (the
// export): two mounts of one export need not share a superblock, and so
// a device number, but write to the same data.
type VolumeIdentity struct {
	// FSType is the type the mount showed ("ext4", "nfs4").
	FSType string
	// Source, when set, makes this a source identity: any mount of a file
	// system of the same family (nfs and nfs4 are one) from this source.
	// Empty: a device identity, Major:Minor.
	Source       string
	Major, Minor uint32
	// FSID is, for a tmpfs, the f_fsid statfs reported when the volume was
	// recorded (see superblock.go); 0 when the kernel reports none.
	FSID uint64
}

// String is "<fstype> <major:minor>" or "<fstype> <source>".
func (id VolumeIdentity) String() string {
	if id.Source != "" {
		return id.FSType + " " + id.Source
	}
	return fmt.Sprintf("%s %d:%d", id.FSType, id.Major, id.Minor)
}

// matches says whether mount e is of the file system id names. A device
// identity wants the type too: every mount of one superblock shows the
// same type, and an anonymous device number (0:N, a tmpfs's, an NFS
// mount's) freed by the release may be handed at once to a new mount of
// another file system, which is not the volume.
func (id VolumeIdentity) matches(e mountEntry) bool {
	if id.Source == "" {
		return e.Major == id.Major && e.Minor == id.Minor && e.FSType == id.FSType
	}
	return isNetworkFS(e.FSType) && fsFamily(e.FSType) == fsFamily(id.FSType) &&
		normalSource(e.Source) == normalSource(id.Source)
}

// identitiesOf are the identities of mount e: its device and, for a
// network file system, its source.
func identitiesOf(e mountEntry) []VolumeIdentity {
	ids := []VolumeIdentity{{FSType: e.FSType, Major: e.Major, Minor: e.Minor}}
	if isNetworkFS(e.FSType) && e.Source != "" && e.Source != "none" {
		ids = append(ids, VolumeIdentity{FSType: e.FSType, Source: e.Source})
	}
	return ids
}

// networkFS are the file system types (see /proc/filesystems and the
// mount helpers) whose data lives on a server, named by the mount's source
// rather than by a local device: NFS (nfs, nfs4), SMB (cifs, smb3, and
// the older smbfs), CephFS (ceph), GlusterFS (glusterfs, and its FUSE
// client fuse.glusterfs), Lustre, 9p, AFS, BeeGFS and GPFS. A FUSE file
// system ("fuse.<name>", "fuseblk") is counted too: its source is what the
// daemon named it (often the remote), and a local FUSE daemon's second
// mount of it reaches the same data.
var networkFS = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true,
	"ceph": true, "glusterfs": true, "lustre": true, "9p": true, "afs": true,
	"beegfs": true, "gpfs": true, "fuse": true, "fuseblk": true,
}

func isNetworkFS(fstype string) bool {
	return networkFS[fstype] || strings.HasPrefix(fstype, "fuse.")
}

// fsFamily puts the types one client mounts under several names together.
func fsFamily(fstype string) string {
	switch fstype {
	case "nfs4":
		return "nfs"
	case "smb3", "smbfs":
		return "cifs"
	}
	return fstype
}

// normalSource drops what does not change which export a source names:
// trailing slashes of its path ("srv:/export/" is "srv:/export").
func normalSource(s string) string {
	if t := strings.TrimRight(s, "/"); t != "" && !strings.HasSuffix(t, ":") {
		return t
	}
	return s
}

package fence

import "testing"

func TestVolumeIdentityMatches(t *testing.T) {
	dev := VolumeIdentity{FSType: "ext4", Major: 8, Minor: 16}
	nfs := VolumeIdentity{FSType: "nfs4", Source: "srv:/export"}
	for _, c := range []struct {
		id   VolumeIdentity
		e    mountEntry
		want bool
	}{
		{dev, mountEntry{FSType: "ext4", Major: 8, Minor: 16, Root: "/sub"}, true}, // a bind of a part of it
		{dev, mountEntry{FSType: "ext4", Major: 8, Minor: 17}, false},
		{VolumeIdentity{FSType: "tmpfs", Minor: 50}, mountEntry{FSType: "overlay", Minor: 50}, false}, // 0:50 handed to a new mount
		{nfs, mountEntry{FSType: "nfs", Source: "srv:/export/", Major: 0, Minor: 99}, true},           // nfs and nfs4 are one family
		{nfs, mountEntry{FSType: "nfs4", Source: "srv:/export/sub"}, false},
		{nfs, mountEntry{FSType: "cifs", Source: "srv:/export"}, false},
		{nfs, mountEntry{FSType: "ext4", Source: "srv:/export"}, false},
		{VolumeIdentity{FSType: "smb3", Source: "//srv/share"}, mountEntry{FSType: "cifs", Source: "//srv/share"}, true},
		{VolumeIdentity{FSType: "fuse.sshfs", Source: "u@h:/d"}, mountEntry{FSType: "fuse.sshfs", Source: "u@h:/d"}, true},
	} {
		if got := c.id.matches(c.e); got != c.want {
			t.Errorf("%v matches %+v = %v, want %v", c.id, c.e, got, c.want)
		}
	}
}

func TestIdentitiesOf(t *testing.T) {
	if ids := identitiesOf(mountEntry{FSType: "tmpfs", Source: "tmpfs", Minor: 50}); len(ids) != 1 || ids[0].String() != "tmpfs 0:50" {
		t.Errorf("a tmpfs: %v; want its device alone", ids)
	}
	ids := identitiesOf(mountEntry{FSType: "ceph", Source: "10.0.0.1:6789:/vol", Minor: 70})
	if len(ids) != 2 || ids[0].String() != "ceph 0:70" || ids[1].String() != "ceph 10.0.0.1:6789:/vol" {
		t.Errorf("a CephFS mount: %v; want its device and its source", ids)
	}
	if got := normalSource("srv:/"); got != "srv:/" {
		t.Errorf("normalSource(srv:/) = %q; the root export keeps its slash", got)
	}
}

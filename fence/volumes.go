package fence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// VolumeMount is one mount of a pod's volume as the node's mount table
// showed it before the kill.
type VolumeMount struct {
	MountPoint   string
	FSType       string
	Source       string
	Major, Minor uint32
	// Pod is the pod's UID; Volume the volume's directory under the pod's
	// volumes/ ("kubernetes.io~csi/pvc-1") or volume-subpaths/ ("pvc-1").
	Pod, Volume string
	// Staging says the mount is the node-wide staging mount of a CSI
	// volume (under plugins/kubernetes.io/csi/), not the pod's own.
	Staging bool
}

// SharedIdentity is an identity left out of a VolumeRecord, with why.
type SharedIdentity struct {
	VolumeIdentity
	Why string
}

// VolumeRecord is what RecordPodVolumes saw of a pod's volumes before the
// kill, for HeldAnywhere to look for after the release.
type VolumeRecord struct {
	Pod    string
	Mounts []VolumeMount
	// Identities are the file systems behind Mounts that belong to the
	// volumes alone: HeldAnywhere looks for each.
	Identities []VolumeIdentity
	// Shared are the file systems behind Mounts that the node also mounts
	// for itself (the root disk behind an emptyDir's subPath bind mount,
	// an export mounted on the host), which no release ends: they do not
	// name the volume, so HeldAnywhere does not look for them.
	Shared []SharedIdentity
}

// RecordPodVolumes records, from Proc/self/mountinfo, every mount of the
// pod's volumes (under pods/<uid>/volumes/ and volume-subpaths/) and of
// its CSI volumes' staging directories as the kubelet recorded them (see
// stagingPaths), with each mount's device, file system type and source.
// Call it before the kill, while the mounts are all there.
//
// Each mount's identities (see VolumeIdentity) are sorted into
// Identities and Shared. An identity is node-shared when the node also
// mounts it somewhere that is neither a pod's volume directory (any
// pod's: two pods of the node may share a volume, and then it is still
// that volume) nor the kubelet's CSI staging directories: such a mount is
// the node's own (the root disk at /, an export mounted on the host), and
// would be found held for ever. Everything else must be gone from every
// mount namespace after the release.
func (m Mounts) RecordPodVolumes(uid string) (VolumeRecord, error) {
	rec := VolumeRecord{Pod: uid}
	podPrefixes, err := m.volumePrefixes(uid)
	if err != nil {
		return rec, err
	}
	if err := m.noBlockVolumes(uid); err != nil {
		return rec, err
	}
	vols, err := m.PodCSIVolumes(uid)
	if err != nil {
		return rec, err
	}
	entries, err := readMountInfo(filepath.Join(m.Proc, "self", "mountinfo"))
	if err != nil {
		return rec, fmt.Errorf("volume mounts of pod %s: %w", uid, err)
	}
	staging := map[string]string{} // staging prefix -> volume
	for _, v := range vols {
		for _, p := range m.stagingPrefixes(v.Stagings) {
			staging[p] = "kubernetes.io~csi/" + filepath.Base(filepath.Dir(v.Target))
		}
	}
	for _, e := range entries {
		if vm, ok := volumeMount(e, uid, podPrefixes, staging); ok {
			rec.Mounts = append(rec.Mounts, vm)
		}
	}
	rec.Identities, rec.Shared = m.classify(rec.Mounts, entries)
	rec.Identities = withSuperblockIDs(rec.Identities, rec.Mounts)
	return rec, nil
}

// volumeMount makes e a VolumeMount of pod uid if it is under one of its
// volume directories or its CSI volumes' staging directories.
func volumeMount(e mountEntry, uid string, podPrefixes []string, staging map[string]string) (VolumeMount, bool) {
	vm := VolumeMount{MountPoint: e.MountPoint, FSType: e.FSType, Source: e.Source,
		Major: e.Major, Minor: e.Minor, Pod: uid}
	for _, p := range podPrefixes {
		if rest, ok := strings.CutPrefix(e.MountPoint, p); ok {
			vm.Volume = volumeName(p, rest)
			return vm, true
		}
	}
	for p, vol := range staging {
		if strings.HasPrefix(e.MountPoint, p) {
			vm.Volume, vm.Staging = vol, true
			return vm, true
		}
	}
	return vm, false
}

// volumeName is the volume's directory of a mount point rest under
// prefix: "<plugin>/<name>" under volumes/, "<name>" under
// volume-subpaths/.
func volumeName(prefix, rest string) string {
	parts := strings.SplitN(rest, "/", 3)
	if strings.HasSuffix(prefix, "/volumes/") && len(parts) >= 2 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// classify sorts the identities of mounts into the volumes' own and the
// node-shared ones (see RecordPodVolumes), each once.
func (m Mounts) classify(mounts []VolumeMount, entries []mountEntry) ([]VolumeIdentity, []SharedIdentity) {
	var own []VolumeIdentity
	var shared []SharedIdentity
	seen := map[VolumeIdentity]bool{}
	for _, vm := range mounts {
		e := mountEntry{MountPoint: vm.MountPoint, FSType: vm.FSType, Source: vm.Source, Major: vm.Major, Minor: vm.Minor}
		for _, id := range identitiesOf(e) {
			if seen[id] {
				continue
			}
			seen[id] = true
			if at := m.nodeMountOf(id, entries); at != "" {
				shared = append(shared, SharedIdentity{id, fmt.Sprintf("node-shared: the node also mounts it at %s, outside every pod's volumes and the CSI staging directories; no release ends that mount", at)})
				continue
			}
			own = append(own, id)
		}
	}
	slices.SortFunc(own, func(a, b VolumeIdentity) int { return strings.Compare(a.String(), b.String()) })
	return own, shared
}

// nodeMountOf is the mount point of a mount of id that is the node's own
// (outside every pod's volume directories and the CSI staging tree), ""
// when there is none.
func (m Mounts) nodeMountOf(id VolumeIdentity, entries []mountEntry) string {
	var podDirs, csiDirs []string
	for _, root := range m.bothRoots(filepath.Clean(m.KubeletRoot)) {
		podDirs = append(podDirs, filepath.Join(root, "pods")+"/")
		csiDirs = append(csiDirs, filepath.Join(root, csiPluginDir)+"/")
	}
	for _, e := range entries {
		if !id.matches(e) || underAny(e.MountPoint, csiDirs) {
			continue
		}
		if rest, ok := cutAnyPrefix(e.MountPoint, podDirs); ok {
			// pods/<uid>/volumes/... or pods/<uid>/volume-subpaths/...
			if parts := strings.SplitN(rest, "/", 3); len(parts) == 3 && (parts[1] == "volumes" || parts[1] == "volume-subpaths") {
				continue
			}
		}
		return e.MountPoint
	}
	return ""
}

// cutAnyPrefix cuts the first of prefixes that s starts with.
func cutAnyPrefix(s string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return "", false
}

// noBlockVolumes refuses a pod with a raw block volume (volumeDevices):
// the kubelet maps it as a device file, not a mount, and the fence can
// neither release it nor show that nothing on the node still opens the
// device, so such a pod is never attested released.
func (m Mounts) noBlockVolumes(uid string) error {
	dir := filepath.Join(m.KubeletRoot, "pods", uid, "volumeDevices")
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("raw block volumes of pod %s: %w", uid, err)
	}
	for _, plugin := range entries {
		devices, _ := os.ReadDir(filepath.Join(dir, plugin.Name()))
		if len(devices) > 0 {
			return fmt.Errorf("pod %s has a raw block volume (%s/%s): %w: the fence releases file systems only",
				uid, plugin.Name(), devices[0].Name(), ErrImpossible)
		}
	}
	return nil
}

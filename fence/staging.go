package fence

import (
	"path/filepath"
	"slices"

	"k8s.io/klog/v2"
)

// csiPluginDir is where the kubelet's CSI volume plugin keeps its per-node
// state, under its root directory.
const csiPluginDir = "plugins/kubernetes.io/csi"

// stagingPaths finds where the kubelet staged v on the node (its
// NodeStageVolume staging_target_path), from what the kubelet recorded
// there rather than from where it is expected. The kubelet's CSI
// attacher (pkg/volume/csi/csi_attacher.go, MountDevice and
// makeDeviceMountPath, read at v1.35-v1.37) stages a volume at
// plugins/kubernetes.io/csi/<driver>/<sha256 of the volume handle>/globalmount
// and writes vol_data.json, with the volume's driverName and
// volumeHandle, in the directory above it; UnmountDevice reads it back
// from there. Kubelets before the handle's hash was used staged at
// plugins/kubernetes.io/csi/pv/<PV name>/globalmount, with the same
// vol_data.json, and a volume staged so before an upgrade stays there
// until it is unstaged. Every plugins/kubernetes.io/csi/*/*/vol_data.json
// naming v's driver and handle is therefore taken, whichever layout wrote
// it; the hash and PV name are not trusted to say which.
func (m Mounts) stagingPaths(v CSIVolume) []string {
	files, err := filepath.Glob(filepath.Join(m.KubeletRoot, csiPluginDir, "*", "*", "vol_data.json"))
	if err != nil {
		return nil // only a bad pattern fails
	}
	var out []string
	for _, f := range files {
		rec, err := readVolData(f)
		if err != nil {
			klog.V(3).InfoS("Fence: a CSI staging record cannot be read; it is not this volume's", "path", f, "err", err)
			continue
		}
		if rec.Driver == v.Driver && rec.Handle == v.Handle {
			out = append(out, filepath.Join(filepath.Dir(f), "globalmount"))
		}
	}
	slices.Sort(out)
	return out
}

// stagingPrefixes are the staging directories (the one above each
// globalmount, which the kubelet made for the volume) with a trailing
// slash, as written and with KubeletRoot's links resolved.
func (m Mounts) stagingPrefixes(staging []string) []string {
	var out []string
	for _, s := range staging {
		for _, dir := range m.bothRoots(filepath.Dir(s)) {
			out = append(out, dir+"/")
		}
	}
	return out
}

// bothRoots is path, under KubeletRoot, and, where KubeletRoot has a
// symbolic link in it, the same path with it resolved: the kernel's mount
// tables show resolved paths.
func (m Mounts) bothRoots(path string) []string {
	root := filepath.Clean(m.KubeletRoot)
	out := []string{path}
	real, err := filepath.EvalSymlinks(root)
	if err != nil || real == root {
		return out
	}
	if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
		out = append(out, filepath.Join(real, rel))
	}
	return out
}

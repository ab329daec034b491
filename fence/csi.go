package fence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
)

// CSIVolume is one CSI volume a pod mounted, as the kubelet recorded it in
// pods/<uid>/volumes/kubernetes.io~csi/<name>/vol_data.json.
type CSIVolume struct {
	Driver string `json:"driverName"`
	Handle string `json:"volumeHandle"`
	// Target is where the kubelet had the driver publish it for the pod;
	// Staging where it had the driver stage it for the node ("" when the
	// kubelet made no staging directory: the driver does not stage).
	Target, Staging string `json:"-"`
}

// PodCSIVolumes reads the pod's CSI volumes.
func (m Mounts) PodCSIVolumes(uid string) ([]CSIVolume, error) {
	if _, err := m.volumePrefixes(uid); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(m.KubeletRoot, "pods", uid, "volumes", "kubernetes.io~csi", "*", "vol_data.json"))
	if err != nil {
		return nil, fmt.Errorf("CSI volumes of pod %s: %w", uid, err)
	}
	var out []CSIVolume
	for _, f := range files {
		v, err := readVolData(f)
		if err != nil {
			return nil, err
		}
		v.Target = filepath.Join(filepath.Dir(f), "mount")
		sum := sha256.Sum256([]byte(v.Handle))
		staging := filepath.Join(m.KubeletRoot, "plugins", "kubernetes.io", "csi", v.Driver, hex.EncodeToString(sum[:]), "globalmount")
		if _, err := os.Stat(staging); err == nil {
			v.Staging = staging
		}
		out = append(out, v)
	}
	return out, nil
}

func readVolData(path string) (CSIVolume, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return CSIVolume{}, fmt.Errorf("read %s: %w", path, err)
	}
	return parseVolData(path, raw)
}

// parseVolData reads the kubelet's vol_data.json (path names it in errors).
func parseVolData(path string, raw []byte) (CSIVolume, error) {
	var v CSIVolume
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	if v.Driver == "" || v.Handle == "" || filepath.Base(v.Driver) != v.Driver {
		return v, fmt.Errorf("%s: driverName %.64q, volumeHandle %.64q: want the kubelet's", path, v.Driver, v.Handle)
	}
	return v, nil
}

// csiSocket is driver's node plugin socket where the kubelet's plugins
// live, "" when none is there.
func (m Mounts) csiSocket(driver string) string {
	sock := filepath.Join(m.KubeletRoot, "plugins", driver, "csi.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return ""
	}
	return sock
}

// ReleaseCSI has each CSI volume's node plugin unpublish it from the pod
// and, when no other pod of the node publishes it, unstage it from the
// node, as the kubelet would once the pod's containers were gone. A volume
// whose driver serves no socket here is left to UnmountPod. It returns
// the staging paths unstaged, which HeldUnder then checks.
func (m Mounts) ReleaseCSI(ctx context.Context, uid string) ([]string, error) {
	vols, err := m.PodCSIVolumes(uid)
	if err != nil {
		return nil, err
	}
	var unstaged []string
	for _, v := range vols {
		sock := m.csiSocket(v.Driver)
		if sock == "" {
			klog.InfoS("Fence: the CSI driver serves no node socket here; its volume is unmounted plainly", "pod", uid, "driver", v.Driver, "volume", v.Handle)
			continue
		}
		staged, err := m.releaseOne(ctx, sock, uid, v)
		if err != nil {
			return unstaged, fmt.Errorf("CSI volume %s of driver %s: %w: %w", v.Handle, v.Driver, ErrImpossible, err)
		}
		if staged != "" {
			unstaged = append(unstaged, staged)
		}
	}
	return unstaged, nil
}

// releaseOne unpublishes v and, if it is the node's last use, unstages it.
func (m Mounts) releaseOne(ctx context.Context, sock, uid string, v CSIVolume) (string, error) {
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	node := csi.NewNodeClient(conn)
	if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: v.Target}); err != nil {
		return "", fmt.Errorf("NodeUnpublishVolume %s: %w", v.Target, err)
	}
	klog.InfoS("Fence: the CSI driver unpublished a pod volume", "pod", uid, "driver", v.Driver, "volume", v.Handle, "target", v.Target)
	if v.Staging == "" {
		return "", nil
	}
	if others, err := m.publishedElsewhere(uid, v); err != nil || others {
		return "", err
	}
	caps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return "", fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	if !slices.ContainsFunc(caps.GetCapabilities(), func(c *csi.NodeServiceCapability) bool {
		return c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	}) {
		return "", nil
	}
	if _, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Handle, StagingTargetPath: v.Staging}); err != nil {
		return "", fmt.Errorf("NodeUnstageVolume %s: %w", v.Staging, err)
	}
	klog.InfoS("Fence: the CSI driver unstaged a volume from the node", "driver", v.Driver, "volume", v.Handle, "staging", v.Staging)
	return v.Staging, nil
}

// publishedElsewhere tells whether another pod of the node still has v
// published (its target a mount point).
func (m Mounts) publishedElsewhere(uid string, v CSIVolume) (bool, error) {
	files, _ := filepath.Glob(filepath.Join(m.KubeletRoot, "pods", "*", "volumes", "kubernetes.io~csi", "*", "vol_data.json"))
	entries, err := readMountInfo(filepath.Join(m.Proc, "self", "mountinfo"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		other, err := readVolData(f)
		if err != nil || other.Handle != v.Handle || other.Driver != v.Driver || filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f))))) == uid {
			continue
		}
		target := filepath.Join(filepath.Dir(f), "mount")
		if slices.ContainsFunc(entries, func(e mountEntry) bool { return e.MountPoint == target }) {
			return true, nil
		}
	}
	return false, nil
}

// HeldUnder is HeldElsewhere for staging paths: "pid <n>: <mountpoint>"
// for every mount, in any mount namespace, in the directory of one of them
// (the kubelet's per-volume directory, which holds globalmount).
func (m Mounts) HeldUnder(paths []string) ([]string, error) {
	var prefixes []string
	for _, p := range paths {
		prefixes = append(prefixes, filepath.Dir(filepath.Clean(p))+"/")
	}
	return m.heldUnder("staging paths", prefixes)
}

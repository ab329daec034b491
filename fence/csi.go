package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// CSIVolume is one CSI volume a pod mounted, as the kubelet recorded it in
// pods/<uid>/volumes/kubernetes.io~csi/<name>/vol_data.json.
type CSIVolume struct {
	Driver string `json:"driverName"`
	Handle string `json:"volumeHandle"`
	// SpecVolID is the volume's name in the pod's spec, or its PV's name.
	SpecVolID string `json:"specVolID"`
	// Target is where the kubelet had the driver publish it for the pod.
	Target string `json:"-"`
	// Staging is where the kubelet had the driver stage it for the node
	// ("" when it recorded no staging directory: the driver does not
	// stage, or it is an inline volume), the first of Stagings, which
	// are every such directory the kubelet recorded for it (see
	// stagingPaths).
	Staging  string   `json:"-"`
	Stagings []string `json:"-"`
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
		v.Stagings = m.stagingPaths(v)
		if len(v.Stagings) > 0 {
			v.Staging = v.Stagings[0]
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

// ReleaseCSI has each CSI volume's node plugin unpublish it from the pod
// and, when no other pod of the node publishes it, unstage it from every
// staging directory the kubelet recorded for it, as the kubelet would once
// the pod's containers were gone. It finds each driver's node socket as
// the kubelet does (registeredCSI, then the conventional path), and
// returns the staging paths unstaged.
//
// Every call to a plugin has its own deadline (CallTimeout, within ctx):
// a plugin that hangs makes the volume's release fail within it. A volume
// is only counted released when the agent's mount table shows its
// target, and its staging directories, no longer mounted. Any failure is
// ErrImpossible: a volume that is staged, or still mounted, and cannot be
// released through its driver (no socket found, a refusal, a deadline)
// must not be attested released. A volume whose driver serves no socket
// and that the kubelet never staged is left to UnmountPod, whose unmount
// of the pod's mount HeldAnywhere then checks.
func (m Mounts) ReleaseCSI(ctx context.Context, uid string) ([]string, error) {
	vols, err := m.PodCSIVolumes(uid)
	if err != nil || len(vols) == 0 {
		return nil, err
	}
	eps := m.registeredCSI(ctx)
	var unstaged []string
	for _, v := range vols {
		sock := m.nodeSocket(eps, v.Driver)
		if sock == "" && len(v.Stagings) > 0 {
			return unstaged, fmt.Errorf("CSI volume %s of driver %s is staged at %s, and the driver's node socket is found neither by plugin registration (%s) nor at %s: %w",
				v.Handle, v.Driver, strings.Join(v.Stagings, ", "), eps, filepath.Join(m.KubeletRoot, "plugins", v.Driver, "csi.sock"), ErrImpossible)
		}
		if sock == "" {
			klog.InfoS("Fence: the CSI driver serves no node socket here and its volume is not staged; it is unmounted plainly", "pod", uid, "driver", v.Driver, "volume", v.Handle)
			continue
		}
		staged, err := m.releaseOne(ctx, sock, uid, v)
		unstaged = append(unstaged, staged...)
		if err != nil {
			return unstaged, fmt.Errorf("CSI volume %s of driver %s at %s: %w: %w", v.Handle, v.Driver, sock, ErrImpossible, err)
		}
	}
	return unstaged, nil
}

// releaseOne unpublishes v and, if it is the node's last use, unstages it;
// it returns the staging paths it saw unstaged.
func (m Mounts) releaseOne(ctx context.Context, sock, uid string, v CSIVolume) ([]string, error) {
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	node := csi.NewNodeClient(conn)
	err = m.call(ctx, func(ctx context.Context) error {
		_, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: v.Target})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("NodeUnpublishVolume %s: %w", v.Target, err)
	}
	if err := m.seenUnmounted(v.Target); err != nil {
		return nil, fmt.Errorf("after NodeUnpublishVolume: %w", err)
	}
	klog.InfoS("Fence: the CSI driver unpublished a pod volume", "pod", uid, "driver", v.Driver, "volume", v.Handle, "target", v.Target)
	if len(v.Stagings) == 0 {
		return nil, nil
	}
	if others, err := m.publishedElsewhere(uid, v); err != nil || others {
		return nil, err
	}
	stages, err := m.stagesVolumes(ctx, node)
	if err != nil || !stages {
		return nil, err
	}
	return m.unstage(ctx, node, v)
}

// stagesVolumes asks the node plugin whether it stages volumes.
func (m Mounts) stagesVolumes(ctx context.Context, node csi.NodeClient) (bool, error) {
	var caps *csi.NodeGetCapabilitiesResponse
	err := m.call(ctx, func(ctx context.Context) (err error) {
		caps, err = node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	return slices.ContainsFunc(caps.GetCapabilities(), func(c *csi.NodeServiceCapability) bool {
		return c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	}), nil
}

// unstage has the plugin unstage v from each of its staging paths, and
// checks each is then no longer mounted.
func (m Mounts) unstage(ctx context.Context, node csi.NodeClient, v CSIVolume) ([]string, error) {
	var done []string
	for _, staging := range v.Stagings {
		err := m.call(ctx, func(ctx context.Context) error {
			_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Handle, StagingTargetPath: staging})
			return err
		})
		if err != nil {
			return done, fmt.Errorf("NodeUnstageVolume %s: %w", staging, err)
		}
		if err := m.seenUnmounted(staging); err != nil {
			return done, fmt.Errorf("after NodeUnstageVolume: %w", err)
		}
		klog.InfoS("Fence: the CSI driver unstaged a volume from the node", "driver", v.Driver, "volume", v.Handle, "staging", staging)
		done = append(done, staging)
	}
	return done, nil
}

// call runs one plugin call with its own deadline, CallTimeout within ctx.
func (m Mounts) call(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, m.callTimeout())
	defer cancel()
	start := time.Now()
	if err := f(cctx); err != nil {
		if cctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
			// the plugin may see the deadline (sent with the call) first
			return fmt.Errorf("no answer within %v: %w", time.Since(start).Round(time.Millisecond), err)
		}
		return err
	}
	return nil
}

// seenUnmounted checks that the agent's mount table has no mount at path
// or below it.
func (m Mounts) seenUnmounted(path string) error {
	entries, err := readMountInfo(filepath.Join(m.Proc, "self", "mountinfo"))
	if err != nil {
		return err
	}
	paths := m.bothRoots(filepath.Clean(path))
	for _, e := range entries {
		for _, p := range paths {
			if e.MountPoint == p || strings.HasPrefix(e.MountPoint, p+"/") {
				return fmt.Errorf("%s is still mounted (%s %s)", e.MountPoint, e.FSType, e.Source)
			}
		}
	}
	return nil
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

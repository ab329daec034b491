package repair

import (
	"context"
	"time"

	"github.com/hangwatch/hangwatch/fence"
)

// hostFence is the fence on this node's cgroups and mounts.
type hostFence struct {
	fence.Hierarchy
	killer fence.Killer
	fence.Mounts
}

// HostFor is the node's Host as s places it.
func HostFor(s FenceSettings) (Host, error) {
	h, err := fence.DetectHierarchy(s.CgroupRoot)
	if err != nil {
		return nil, err
	}
	return hostFence{Hierarchy: h, killer: fence.Killer{H: h, Proc: "/proc"},
		Mounts: fence.Mounts{Proc: "/proc", KubeletRoot: s.KubeletRootDir}}, nil
}

func (h hostFence) Check(dir string) error { return h.killer.Check(dir) }

func (h hostFence) Kill(ctx context.Context, dir string) ([]int, error) {
	return h.killer.Kill(ctx, dir)
}

// unmountTimeout bounds UnmountPod while Host.UnmountPod takes no context.
const unmountTimeout = 30 * time.Second

// UnmountPod is fence.Mounts.UnmountPod within unmountTimeout, for a Host
// whose UnmountPod takes no context; once Host's takes one
// (UnmountPod(ctx, uid)), this method goes and the embedded one serves.
func (h hostFence) UnmountPod(uid string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), unmountTimeout)
	defer cancel()
	return h.Mounts.UnmountPod(ctx, uid)
}

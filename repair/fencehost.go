package repair

import (
	"context"

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

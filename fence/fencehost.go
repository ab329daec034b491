package fence

import (
	"context"
)

// hostFence is the fence on this node's cgroups and mounts.
type hostFence struct {
	Hierarchy
	killer Killer
	Mounts
}

// HostFor is the node's Host as s places it.
func HostFor(s Settings) (Host, error) {
	h, err := DetectHierarchy(s.CgroupRoot)
	if err != nil {
		return nil, err
	}
	return hostFence{Hierarchy: h, killer: Killer{H: h, Proc: "/proc"},
		Mounts: Mounts{Proc: "/proc", KubeletRoot: s.KubeletRootDir}}, nil
}

func (h hostFence) Check(dir string) error { return h.killer.Check(dir) }

func (h hostFence) Kill(ctx context.Context, dir string) ([]int, error) {
	return h.killer.Kill(ctx, dir)
}

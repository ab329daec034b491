package fence

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Hierarchy is where the pod cgroups are found.
type Hierarchy struct {
	// Root is the cgroup file system's mount point, "/sys/fs/cgroup" on a host.
	Root string
	// V2: the unified hierarchy is mounted at Root (cgroup v2); otherwise
	// cgroup v1, whose freezer controller is at Root/freezer.
	V2 bool
}

// DetectHierarchy reads root and says which hierarchy it holds: cgroup v2
// when root itself is a cgroup2 mount (statfs magic CGROUP2_SUPER_MAGIC),
// cgroup v1 when root/freezer is a directory. Anything else is an error that
// names what is missing ("no cgroup control").
func DetectHierarchy(root string) (Hierarchy, error) {
	return detectHierarchy(root, unix.Statfs)
}

func detectHierarchy(root string, statfs func(string, *unix.Statfs_t) error) (Hierarchy, error) {
	var st unix.Statfs_t
	if err := statfs(root, &st); err != nil {
		return Hierarchy{}, fmt.Errorf("no cgroup control: statfs %s: %w", root, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return Hierarchy{Root: root, V2: true}, nil
	}
	freezer := filepath.Join(root, "freezer")
	fi, err := os.Stat(freezer)
	if err != nil {
		return Hierarchy{}, fmt.Errorf("no cgroup control: %s is not a cgroup2 mount and has no v1 freezer: %w", root, err)
	}
	if !fi.IsDir() {
		return Hierarchy{}, fmt.Errorf("no cgroup control: %s is not a cgroup2 mount and %s is not a directory", root, freezer)
	}
	return Hierarchy{Root: root}, nil
}

// base is the directory the pod cgroups are searched under.
func (h Hierarchy) base() string {
	if h.V2 {
		return h.Root
	}
	return filepath.Join(h.Root, "freezer")
}

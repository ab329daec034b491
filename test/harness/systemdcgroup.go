package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// makeCgroup makes the cgroup systemd runs in, in the hierarchies that
// track processes (name=systemd and the unified one; on a cgroup v2 host
// the only one), and returns the cgroup.procs files its boot script moves
// into, and "1" when /sys/fs/cgroup is a tmpfs (cgroup v1 or hybrid).
func (s *Systemd) makeCgroup() ([]string, string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, "", fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	const tmpfsMagic = 0x01021994
	var hierarchies []string
	tmpfs := ""
	if st.Type == tmpfsMagic {
		tmpfs = "1"
		for _, h := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil {
				hierarchies = append(hierarchies, h)
			}
		}
	} else {
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	var procs []string
	for _, h := range hierarchies {
		dir := filepath.Join(h, s.cgroup)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("make systemd's cgroup: %w", err)
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	if len(procs) == 0 {
		return nil, "", errors.New("no name=systemd or unified cgroup hierarchy under /sys/fs/cgroup")
	}
	return procs, tmpfs, nil
}

// removeCgroup removes systemd's cgroup tree in every hierarchy, deepest
// first, polling for up to ten seconds while cgroups are still busy.
func (s *Systemd) removeCgroup() {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", s.cgroup))
	roots = append(roots, filepath.Join("/sys/fs/cgroup", s.cgroup))
	// Cgroups still busy after ten seconds are left behind.
	_, _ = Poll(context.Background(), 10*time.Second, "systemd's cgroups removed", func() bool {
		busy := false
		for _, root := range roots {
			var dirs []string
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			slices.Reverse(dirs)
			for _, d := range dirs {
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
					busy = true
				}
			}
		}
		return !busy
	})
}

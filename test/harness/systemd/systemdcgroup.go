package systemd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
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
	if s.ownCgroups {
		if tmpfs == "" {
			return nil, "", errors.New("a systemd with cgroups of its own needs cgroup v1 (a cgroup v2 host's would need its parent's controllers delegated)")
		}
		return nil, tmpfs, nil // ownCgroupsScript makes them
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
	if s.ownCgroups {
		s.removeOwnCgroups()
		return
	}
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", s.cgroup))
	roots = append(roots, filepath.Join("/sys/fs/cgroup", s.cgroup))
	// Cgroups still busy after ten seconds are left behind.
	_, _ = harness.Poll(context.Background(), 10*time.Second, "systemd's cgroups removed", func() bool {
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

// ownCgroupsScript makes ("move") or removes ("remove", $1) the cgroup
// root of a systemd with cgroups of its own, $HW_CGROUP, in every
// hierarchy of the process running it, below that process's own cgroup
// there (the test's: in the memory hierarchy the test's own limit still
// holds), with its parent's cpus and memory nodes. Each hierarchy is
// mounted anew at $HW_CGROUP_MNT/<id> in the script's private mount
// namespace, so it reaches those the host leaves unmounted too (here
// hugetlb, net_cls,net_prio and perf_event), which the kubelet wants its
// cgroups in. "move" moves process $2 in (the boot script, before it
// enters a cgroup namespace rooted there); "remove" removes the tree
// deepest first and fails while a cgroup in it is busy.
const ownCgroupsScript = `set -e
mkdir -p "$HW_CGROUP_MNT"
rc=0
while IFS=: read -r id ctrls path; do
  d="$HW_CGROUP_MNT/$id"
  mkdir -p "$d"
  if [ -z "$ctrls" ]; then
    mount -t cgroup2 cgroup2 "$d"
  else
    opts=$ctrls
    [ "${ctrls#name=}" = "$ctrls" ] || opts=none,$ctrls
    mount -t cgroup -o "$opts" cgroup "$d"
  fi
  cg="$d${path%/}/$HW_CGROUP"
  if [ "$1" = move ]; then
    mkdir "$cg"
    for f in cpuset.cpus cpuset.mems; do
      if [ -f "$cg/$f" ]; then cat "$cg/../$f" > "$cg/$f"; fi
    done
    echo "$2" > "$cg/cgroup.procs"
  elif [ -d "$cg" ]; then
    find "$cg" -depth -type d -exec rmdir {} + || rc=1
  fi
  umount "$d"
done < /proc/self/cgroup
exit $rc
`

// ownCgroupsEnv is the boot script's environment for ownCgroupsScript.
func (s *Systemd) ownCgroupsEnv() []string {
	return []string{"HW_CGROUPNS=1", "HW_OWN_CGROUPS=" + ownCgroupsScript, "HW_CGROUP=" + s.cgroup,
		"HW_CGROUP_MNT=" + filepath.Join(s.Dir, "cgroups")}
}

// removeOwnCgroups removes the cgroup tree of a systemd with cgroups of
// its own from every hierarchy (ownCgroupsScript in a mount namespace of
// its own), polling for up to ten seconds while cgroups are still busy.
func (s *Systemd) removeOwnCgroups() {
	var out []byte
	_, err := harness.Poll(context.Background(), 10*time.Second, "systemd's own cgroups removed", func() bool {
		cmd := exec.Command("unshare", "--mount", "sh", "-c", ownCgroupsScript, "own-cgroups", "remove")
		cmd.Env = append(os.Environ(), s.ownCgroupsEnv()...)
		var err error
		out, err = cmd.CombinedOutput()
		return err == nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "systemd %s: its cgroups left: %v\n%s", s.Dir, err, out)
	}
}

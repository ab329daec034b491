package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// cgroupFS is where this machine mounts its cgroup file systems.
const cgroupFS = "/sys/fs/cgroup"

// StartWithPodCgroupsT starts a kubelet for node with pod cgroups
// (cgroupsPerQOS) under a cgroup root of its own, and stops it, removing
// those cgroups, when t ends. Two such kubelets share a machine without
// touching each other's pods.
func StartWithPodCgroupsT(t testing.TB, cp *harness.ControlPlane, c NodeRuntime, node string) *Kubelet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, bin, err := newKubelet(node, os.Getenv("HANGWATCH_KUBELET_FEATURE_GATES"))
	if err != nil {
		t.Fatal(err)
	}
	k.CgroupRoot = podCgroupRoot(node)
	if err := makeCgroups(cgroupFS, k.CgroupRoot); err != nil {
		t.Fatal(err)
	}
	if err := k.start(ctx, bin, cp, c.Where().Endpoint); err != nil {
		tail := k.logTail() // before Stop, which removes the kubelet's dir and its log
		k.Stop()
		t.Fatalf("%v\n%s", err, tail)
	}
	t.Cleanup(k.Stop)
	return k
}

// podCgroupRoot is the cgroup root of node's kubelet with pod cgroups;
// node names are unique only within a test process.
func podCgroupRoot(node string) string {
	return fmt.Sprintf("/hangwatch-test-%d-%s", os.Getpid(), node)
}

// cgroupFS is the cgroup file system the kubelet sees: the host's, or
// under systemd the one in systemd's mount namespace, which also has the
// v1 hierarchies the host leaves unmounted (systemd mounts them at boot:
// here hugetlb, net_cls,net_prio and perf_event), each of which the
// kubelet wants its cgroup root in.
func (k *Kubelet) cgroupFS() string {
	if k.sd == nil {
		return cgroupFS
	}
	return filepath.Join("/proc", strconv.Itoa(k.sd.PID()), "root", cgroupFS)
}

// makeCgroups makes root in every hierarchy under fs (the kubelet wants
// its cgroup root to exist), with its parent's cpus and memory nodes.
func makeCgroups(fs, root string) error {
	hierarchies, err := os.ReadDir(fs)
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if !isCgroupMount(filepath.Join(fs, h.Name())) {
			continue
		}
		dir := filepath.Join(fs, h.Name(), root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(fs, h.Name(), f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// isCgroupMount tells whether dir is a cgroup hierarchy, not a symbolic
// link to one (systemd links cpu and cpuacct to cpu,cpuacct where they
// are joined) nor a directory of the tmpfs (where they are not, systemd
// leaves an empty cpu,cpuacct on its read-only tmpfs).
func isCgroupMount(dir string) bool {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	const cgroupMagic, cgroup2Magic = 0x27e0eb, 0x63677270
	return st.Type == cgroupMagic || st.Type == cgroup2Magic
}

// removeCgroups kills what still runs in root's pod cgroups (the
// containers outlive the kubelet, and its runtime is stopped later), then
// removes root's cgroups in every hierarchy under fs, deepest first; what
// cannot be removed is left.
func removeCgroups(fs, root string) {
	if root == "" {
		return
	}
	freezer := filepath.Join(fs, "freezer", root)
	_ = os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = harness.Poll(ctx, 10*time.Second, "the pod cgroups under "+root+" to empty", func() bool {
		pids := cgroupPids(freezer)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0
	})
	hierarchies, _ := os.ReadDir(fs)
	for _, h := range hierarchies {
		top := filepath.Join(fs, h.Name(), root)
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	}
}

// cgroupPids are the processes of every cgroup under dir.
func cgroupPids(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		raw, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// PodCgroup is the cgroup of the pod uid under k's pod cgroups in
// hierarchy (freezer, memory, ...), as the kubelet names it with its
// cgroup driver (pod<uid>, or with the systemd driver
// kubepods-<qos>-pod<uid with _ for ->.slice); "" when there is none.
func PodCgroup(k *Kubelet, hierarchy, uid string) string {
	base := k.podCgroupBase(hierarchy)
	if base == "" {
		return ""
	}
	cgroupfs, systemd := "pod"+uid, "-pod"+strings.ReplaceAll(uid, "-", "_")+".slice"
	var found string
	_ = filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == cgroupfs || strings.HasSuffix(d.Name(), systemd)) {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// podCgroupBase is where k's pod cgroups are in hierarchy: its cgroup
// root, or with the systemd driver kubepods.slice of its systemd; ""
// when it has none.
func (k *Kubelet) podCgroupBase(hierarchy string) string {
	switch {
	case k.systemdPodCgroups:
		return filepath.Join(k.cgroupFS(), hierarchy, "kubepods.slice")
	case k.CgroupRoot != "":
		return filepath.Join(k.cgroupFS(), hierarchy, k.CgroupRoot)
	}
	return ""
}

// CgroupPids are the processes of the pod uid's freezer cgroup on k.
func CgroupPids(k *Kubelet, uid string) []int {
	dir := PodCgroup(k, "freezer", uid)
	if dir == "" {
		return nil
	}
	return cgroupPids(dir)
}

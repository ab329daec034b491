package fence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// HeldElsewhere scans every Proc/<pid>/mountinfo, once per mount namespace
// (the link target of Proc/<pid>/ns/mnt; pids whose namespace was already
// read are skipped, and so are pids that vanish; a pid whose namespace
// cannot be named has its table read all the same), and returns
// "pid <n>: <mountpoint>" for every mount point under the pod's volumes/ or
// volume-subpaths/ directories. Empty means no namespace holds them. A pid
// whose mount table cannot be read for another reason (EACCES) is an
// error: the proof would be incomplete.
//
// Mount points are matched by path, as each process sees them from its root
// directory; a namespace that holds a volume at another path is not found.
func (m Mounts) HeldElsewhere(uid string) ([]string, error) {
	prefixes, err := m.volumePrefixes(uid)
	if err != nil {
		return nil, err
	}
	return m.heldUnder("pod "+uid+" volumes", prefixes)
}

// heldUnder reads every mount namespace for mount points under prefixes.
func (m Mounts) heldUnder(what string, prefixes []string) ([]string, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	var held []string
	_, err := m.eachNamespace(context.Background(), func(pid int, _ string, entries []mountEntry) {
		for _, e := range entries {
			if underAny(e.MountPoint, prefixes) {
				held = append(held, fmt.Sprintf("pid %d: %s", pid, e.MountPoint))
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("mount namespaces holding %s: %w", what, err)
	}
	return held, nil
}

// eachNamespace calls fn with the mount table of one pid of each mount
// namespace of Proc (and that namespace's name, "mnt:[<inode>]", "" when
// it cannot be named), in ascending pid order, until ctx ends: pids whose
// namespace was already read are skipped, and so are pids that vanish; a
// pid whose namespace cannot be named has its table read all the same. A
// pid whose mount table cannot be read for another reason (EACCES) is an
// error: the proof would be incomplete. It returns every named namespace
// seen with its pids, the one read first.
func (m Mounts) eachNamespace(ctx context.Context, fn func(pid int, ns string, entries []mountEntry)) (map[string][]int, error) {
	pids, err := listPids(m.Proc)
	if err != nil {
		return nil, err
	}
	seen := map[string][]int{}
	for _, pid := range pids {
		if ctx.Err() != nil {
			return nil, ctxFailure(ctx, "read every mount namespace's mount table")
		}
		ns, entries, err := m.mountTable(pid, seen)
		if err != nil {
			return nil, err
		}
		if entries != nil {
			fn(pid, ns, entries)
		}
	}
	return seen, nil
}

// mountTable reads pid's mount table, unless its namespace is in seen
// (then, or when pid is gone, the table is nil), and adds pid to its
// namespace's in seen. It returns the namespace's name too.
func (m Mounts) mountTable(pid int, seen map[string][]int) (string, []mountEntry, error) {
	dir := filepath.Join(m.Proc, strconv.Itoa(pid))
	ns, err := os.Readlink(filepath.Join(dir, "ns", "mnt"))
	if vanished(err) {
		return "", nil, nil
	}
	if errors.Is(err, os.ErrPermission) {
		ns = "" // not named (a process not dumpable to us): its table is read all the same
	} else if err != nil {
		return "", nil, fmt.Errorf("mount namespace of pid %d: %w", pid, err)
	}
	if ns != "" && len(seen[ns]) > 0 {
		seen[ns] = append(seen[ns], pid)
		return ns, nil, nil
	}
	entries, err := readMountInfo(filepath.Join(dir, "mountinfo"))
	if vanished(err) || errors.Is(err, unix.EINVAL) {
		return ns, nil, nil // exited (a zombie has no mount namespace: EINVAL)
	}
	if err != nil {
		return ns, nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if ns != "" {
		seen[ns] = append(seen[ns], pid)
	}
	if entries == nil {
		entries = []mountEntry{}
	}
	return ns, entries, nil
}

// listPids lists the numeric entries of proc, in ascending order.
func listPids(proc string) ([]int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

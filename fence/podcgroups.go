package fence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSearchDepth is how many levels below the hierarchy's base a pod cgroup
// may be (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod….slice
// is 3).
const maxSearchDepth = 6

// PodCgroups finds, for each pod UID given, the directories of that pod's
// cgroup: a directory, at most 6 levels below the freezer hierarchy (v1) or
// Root (v2), named "pod<uid>" (cgroupfs driver, e.g.
// kubepods/besteffort/pod<uid>) or ending in "-pod<uid_with_underscores>.slice"
// (systemd driver, e.g.
// kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice).
// It returns map uid -> absolute dirs; a UID may have several (two kubelet
// roots), and UIDs not found are absent. It does not look inside a pod's
// cgroup, nor follow symbolic links.
func (h Hierarchy) PodCgroups(uids []string) (map[string][]string, error) {
	found := map[string][]string{}
	m := newPodMatcher(uids)
	if m.empty() {
		return found, nil
	}
	base, err := filepath.Abs(h.base())
	if err != nil {
		return nil, fmt.Errorf("pod cgroups under %s: %w", h.base(), err)
	}
	if err := searchPodDirs(base, 1, m, found); err != nil {
		return nil, err
	}
	return found, nil
}

// searchPodDirs looks for pod cgroups among the subdirectories of dir, which
// are depth levels below the base, and below them down to maxSearchDepth.
func searchPodDirs(dir string, depth int, m podMatcher, found map[string][]string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if depth > 1 && errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we searched
		}
		return fmt.Errorf("search pod cgroups in %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if uid, ok := m.match(e.Name()); ok {
			found[uid] = append(found[uid], path)
			continue
		}
		if depth < maxSearchDepth {
			if err := searchPodDirs(path, depth+1, m, found); err != nil {
				return err
			}
		}
	}
	return nil
}

// podMatcher recognises the cgroup directory names of a set of pods.
type podMatcher struct {
	cgroupfs map[string]string // "pod<uid>" -> uid
	systemd  map[string]string // "pod<uid with _ for ->" -> uid
}

func newPodMatcher(uids []string) podMatcher {
	m := podMatcher{cgroupfs: map[string]string{}, systemd: map[string]string{}}
	for _, uid := range uids {
		if uid == "" {
			continue
		}
		m.cgroupfs["pod"+uid] = uid
		m.systemd["pod"+strings.ReplaceAll(uid, "-", "_")] = uid
	}
	return m
}

func (m podMatcher) empty() bool { return len(m.cgroupfs) == 0 }

// match says which pod, if any, a directory name is the cgroup of.
func (m podMatcher) match(name string) (string, bool) {
	if uid, ok := m.cgroupfs[name]; ok {
		return uid, true
	}
	unit, ok := strings.CutSuffix(name, ".slice")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(unit, '-')
	if i < 0 {
		return "", false
	}
	uid, ok := m.systemd[unit[i+1:]]
	return uid, ok
}

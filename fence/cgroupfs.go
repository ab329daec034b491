package fence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// readPids reads the pids listed in a cgroup.procs file.
func readPids(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pids: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("read pids: %s: bad pid %q", path, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// walkCgroups calls fn for dir and every directory below it, parents before
// children. Subdirectories removed while it walks are skipped; dir itself
// missing is an error wrapping fs.ErrNotExist.
func walkCgroups(dir string, fn func(dir string) error) error {
	if err := fn(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		err := walkCgroups(filepath.Join(dir, e.Name()), fn)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// subtreePids lists, sorted and once each, the pids in every cgroup.procs of
// dir's subtree. dir missing is an error wrapping fs.ErrNotExist (a cgroup
// directory can only be removed once it is empty).
func subtreePids(dir string) ([]int, error) {
	var all []int
	err := walkCgroups(dir, func(d string) error {
		pids, err := readPids(filepath.Join(d, "cgroup.procs"))
		all = append(all, pids...)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// readTrimmed reads a one-value cgroup file such as freezer.state.
func readTrimmed(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// eventValue reads key's value in a cgroup.events file ("populated 1\nfrozen 0").
func eventValue(path, key string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("read %s: no %q line", path, key)
}

// writeFile writes value to an existing cgroup file; it never creates one.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

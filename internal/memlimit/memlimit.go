// Package memlimit finds the memory limit of the process's cgroup, for the
// Go runtime's soft memory limit (GOMEMLIMIT): a container's
// resources.limits.memory is its cgroup's memory.max (cgroup v2) or
// memory/memory.limit_in_bytes (v1), and the kernel kills the container
// when its usage reaches it, whatever the Go heap's next collection target.
package memlimit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Unlimited: a limit at or above this is no limit. cgroup v1 writes "no
// limit" as its largest page count in bytes (9223372036854771712 with 4 KiB
// pages); v2 writes "max".
const Unlimited = 1 << 62

// maxFileBytes bounds a read: /proc/self/cgroup has a line per hierarchy,
// a limit file one number.
const maxFileBytes = 64 << 10

// Files are where the limit is read; tests give their own.
type Files struct {
	Root string // where the cgroup file systems are mounted: /sys/fs/cgroup
	Self string // the process's cgroups: /proc/self/cgroup
}

// Default are the system's files.
func Default() Files { return Files{Root: "/sys/fs/cgroup", Self: "/proc/self/cgroup"} }

// Limit is a memory limit found, and the file that set it.
type Limit struct {
	Bytes int64
	File  string
}

// Read returns the lowest memory limit on the process's cgroup and its
// ancestors, cgroup v2 (Root/<path>/memory.max) or v1
// (Root/memory/<path>/memory.limit_in_bytes); ok is false when none sets
// one. A container sees its own cgroup at the mount's top (cgroup
// namespace, or v1's bind mount), where /proc/self/cgroup's path may not
// exist: the walk up from that path reaches it. On a host, the walk finds
// the service's own limit. Errors name the file and its content.
func (f Files) Read() (lim Limit, ok bool, err error) {
	v2, v1 := "/", "/"
	if data, rerr := readBounded(f.Self); rerr == nil {
		v2, v1 = ParseCgroups(data)
	}
	for _, c := range []struct{ top, path, file string }{
		{f.Root, v2, "memory.max"},
		{filepath.Join(f.Root, "memory"), v1, "memory.limit_in_bytes"},
	} {
		l, found, err := lowestUp(c.top, c.path, c.file)
		if err != nil {
			return Limit{}, false, err
		}
		if found && (!ok || l.Bytes < lim.Bytes) {
			lim, ok = l, true
		}
	}
	return lim, ok, nil
}

// lowestUp reads file in top/path and each directory above it up to top,
// and returns the lowest limit set.
func lowestUp(top, path, file string) (lim Limit, ok bool, err error) {
	dir := filepath.Join(top, path)
	for {
		name := filepath.Join(dir, file)
		data, err := readBounded(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Limit{}, false, err
		default:
			v, limited, perr := ParseLimit(data)
			if perr != nil {
				return Limit{}, false, fmt.Errorf("%s: %w", name, perr)
			}
			if limited && (!ok || v < lim.Bytes) {
				lim, ok = Limit{Bytes: v, File: name}, true
			}
		}
		if dir == top || len(dir) <= len(top) {
			return lim, ok, nil
		}
		dir = filepath.Dir(dir)
	}
}

// ParseLimit reads memory.max or memory.limit_in_bytes: a number of bytes,
// or "max". ok is false for no limit: "max", 0 (no process runs under it:
// not a limit meant) or Unlimited and above.
func ParseLimit(b []byte) (bytes int64, ok bool, err error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("memory limit %.40q: not a number of bytes or \"max\"", s)
	}
	if v == 0 || v >= Unlimited {
		return 0, false, nil
	}
	return int64(v), true, nil
}

// ParseCgroups reads /proc/self/cgroup ("ID:controllers:path" lines) and
// returns the process's cgroup v2 path (ID 0, no controllers) and its v1
// memory controller's path, each "/" when absent. A path is made absolute
// and clean: in a cgroup namespace one outside it reads "/../x", which
// must not lead out of the mount.
func ParseCgroups(b []byte) (v2, v1Memory string) {
	v2, v1Memory = "/", "/"
	for _, line := range strings.Split(string(b), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2 = filepath.Clean("/" + path)
		case containsWord(controllers, "memory"):
			v1Memory = filepath.Clean("/" + path)
		}
	}
	return v2, v1Memory
}

func containsWord(list, word string) bool {
	for _, w := range strings.Split(list, ",") {
		if w == word {
			return true
		}
	}
	return false
}

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

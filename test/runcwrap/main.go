// Command runcwrap is the OCI runtime the test harness gives CRI-O: runc,
// with two changes made to a container's bundle before runc creates it,
// for what the test machines lack. A test harness necessity, not a part
// of hangwatch:
//   - an oom_score_adj below the floor this process may set (its own,
//     inherited from CRI-O) is raised to that floor. The machines' root
//     lacks CAP_SYS_RESOURCE, so runc fails a container the kubelet gives
//     -997 (a system-node-critical pod, such as hangwatch's static pod)
//     with "failed to update /proc/self/oom_score_adj: Permission denied".
//     containerd has a setting for this (restrict_oom_score_adj); CRI-O
//     has none;
//   - hugepage limits are dropped when the cgroup v1 hugetlb hierarchy is
//     not mounted: the kernel has the controller, so CRI-O passes on the
//     kubelet's limits, but runc then fails with "cannot set hugetlb
//     limit: container could not join or create cgroup".
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// runc is the runc this wraps, set when the harness builds it
// (-ldflags -X main.runc=PATH).
var runc string

func main() {
	if err := restrictOOMScoreAdj(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runcwrap:", err)
		os.Exit(1)
	}
	err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "runcwrap: exec %q: %v\n", runc, err)
	os.Exit(1)
}

// restrictOOMScoreAdj raises the bundle's process.oomScoreAdj to this
// process's own for `create` and `run`; other commands pass unchanged.
func restrictOOMScoreAdj(args []string) error {
	bundle, ok := bundleOf(args)
	if !ok {
		return nil
	}
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return err
	}
	floor, err := strconv.Atoi(strings.TrimSpace(string(own)))
	if err != nil {
		return fmt.Errorf("/proc/self/oom_score_adj %q: %w", own, err)
	}
	_, err = os.Stat("/sys/fs/cgroup/hugetlb")
	return fitSpec(filepath.Join(bundle, "config.json"), floor, err == nil)
}

// bundleOf is the bundle of a create or run command: its --bundle (-b),
// else the working directory, as runc's own default.
func bundleOf(args []string) (string, bool) {
	cmd := -1
	for i, a := range args {
		if a == "create" || a == "run" {
			cmd = i
			break
		}
	}
	if cmd < 0 {
		return "", false
	}
	rest := args[cmd+1:]
	for i, a := range rest {
		if v, ok := strings.CutPrefix(a, "--bundle="); ok {
			return v, true
		}
		if (a == "--bundle" || a == "-b") && i+1 < len(rest) {
			return rest[i+1], true
		}
	}
	dir, err := os.Getwd()
	return dir, err == nil
}

// fitSpec rewrites the spec at path with process.oomScoreAdj at least
// floor and, without hugetlb, no linux.resources.hugepageLimits; numbers
// are kept as written (json.Number), and a spec that needs neither change
// is left untouched.
func fitSpec(path string, floor int, hugetlb bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	changed, err := raiseOOMScoreAdj(spec, floor)
	if err != nil {
		return err
	}
	if resources, _ := dig(spec, "linux", "resources").(map[string]any); !hugetlb && resources["hugepageLimits"] != nil {
		delete(resources, "hugepageLimits")
		changed = true
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// raiseOOMScoreAdj raises the spec's process.oomScoreAdj to floor and
// says whether it did.
func raiseOOMScoreAdj(spec map[string]any, floor int) (bool, error) {
	adj, ok := dig(spec, "process", "oomScoreAdj").(json.Number)
	if !ok {
		return false, nil
	}
	n, err := adj.Int64()
	if err != nil || n >= int64(floor) {
		return false, err
	}
	dig(spec, "process").(map[string]any)["oomScoreAdj"] = floor
	return true, nil
}

// dig is the value at path in nested JSON objects, or nil.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

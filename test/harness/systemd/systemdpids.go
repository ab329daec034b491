package systemd

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PID is systemd's process ID on the host.
func (s *Systemd) PID() int { return s.pid }

// HostPID translates a PID in systemd's namespace into the host's: the
// process below systemd whose NSpid has nsPID at systemd's level.
func (s *Systemd) HostPID(nsPID int) (int, error) {
	for _, pid := range s.Processes() {
		ids, err := nsPIDs(pid)
		if err == nil && len(ids) > s.level && ids[s.level] == nsPID {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process with PID %d in systemd's namespace", nsPID)
}

// Processes are the host PIDs of systemd and every process below it: all
// of its PID namespace and the namespaces made in it (containers).
func (s *Systemd) Processes() []int {
	if s.pid == 0 {
		return nil
	}
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid := parentOf(pid); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{s.pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// childOf is the first child of ppid found in /proc, or 0.
func childOf(ppid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && parentOf(pid) == ppid {
			return pid
		}
	}
	return 0
}

// parentOf is pid's parent from /proc/pid/stat, or 0.
func parentOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// nsPIDs is pid's NSpid line: its PID in each PID namespace it is in,
// from the host's down to its own.
func nsPIDs(pid int) ([]int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		var ids []int
		for _, f := range strings.Fields(rest) {
			id, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("NSpid of %d: %w", pid, err)
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	return nil, fmt.Errorf("no NSpid in /proc/%d/status", pid)
}

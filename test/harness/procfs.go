package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests' readers of /proc: a process's state, its memory and its CPU
// time.

// ProcState reads the state letter of process pid from /proc/PID/stat: R,
// S, D, Z, T... The comm field before it is in parentheses and may itself
// hold spaces and parentheses, so the state is read after the last ')'.
func ProcState(pid int) (byte, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	return fields[0][0], nil
}

// procStatFields reads /proc/PID/stat and returns its fields after the
// comm: the state first, utime at 11 and stime at 12.
func procStatFields(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, fmt.Errorf("state of process %d: %w", pid, err)
	}
	if _, err := parseProcState(data); err != nil {
		return nil, err
	}
	return strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:])), nil
}

// parseProcState finds the state letter in the text of a /proc/PID/stat.
func parseProcState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, fmt.Errorf("no state in /proc stat %q", stat)
	}
	return stat[i+2], nil
}

// WaitProcState polls pid's state until it is want, returning an error when
// the process is gone or ctx ends first (at most a minute).
func WaitProcState(ctx context.Context, pid int, want byte) error {
	var state byte
	var err error
	_, pollErr := Poll(ctx, time.Minute, fmt.Sprintf("process %d in state %c", pid, want), func() bool {
		state, err = ProcState(pid)
		return err != nil || state == want
	}, Every(10*time.Millisecond), Explaining(func() string { return fmt.Sprintf("it is in %c", state) }))
	if err != nil {
		return err
	}
	return pollErr
}

// ProcCPU reads the CPU time process pid has used, user and system, from
// /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("process %d: short /proc stat", pid)
	}
	utime, _ := strconv.ParseUint(fields[11], 10, 64)
	stime, _ := strconv.ParseUint(fields[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100), nil // USER_HZ is 100 on Linux
}

// ProcMemory is a process's memory from /proc/PID/status, in KiB.
type ProcMemory struct {
	RSS  uint64 // VmRSS: all of it resident
	Anon uint64 // RssAnon: its own (heap, stacks)
	File uint64 // RssFile: mapped files' pages, its binary's among them
	Peak uint64 // VmHWM: the most it has had resident
}

// ReadProcMemory reads process pid's memory from /proc/PID/status.
func ReadProcMemory(pid int) (ProcMemory, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ProcMemory{}, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	var m ProcMemory
	fields := map[string]*uint64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File, "VmHWM:": &m.Peak}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && fields[f[0]] != nil {
			*fields[f[0]], _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	return m, nil
}

// ProcUsage reads process pid's CPU time and memory, failing t when it
// cannot.
func ProcUsage(t testing.TB, pid int) (time.Duration, ProcMemory) {
	t.Helper()
	cpu, err := ProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := ReadProcMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	return cpu, mem
}

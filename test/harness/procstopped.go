package harness

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunningContainers are the IDs of the running containers of a runtime,
// sorted.
func RunningContainers(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient) []string {
	t.Helper()
	resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	var ids []string
	for _, ctr := range resp.Containers {
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids = append(ids, ctr.Id)
		}
	}
	slices.Sort(ids)
	return ids
}

// WaitStopped polls until pid is stopped (state T), or is not, as a
// signal takes effect when the process is next scheduled.
func WaitStopped(ctx context.Context, pid int, stopped bool) error {
	var state byte
	_, err := Poll(ctx, 10*time.Second, fmt.Sprintf("process %d stopped %v", pid, stopped), func() bool {
		state, _ = ProcState(pid)
		return (state == 'T') == stopped
	}, Every(10*time.Millisecond), Explaining(func() string { return fmt.Sprintf("in state %q", state) }))
	return err
}

// CheckFreezeThaw freezes and thaws through the harness's methods and
// checks that process pid stopped and went on.
func CheckFreezeThaw(ctx context.Context, t *testing.T, pid int, freeze, thaw func() error) {
	t.Helper()
	if err := freeze(); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(ctx, pid, true); err != nil {
		t.Error(err)
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(ctx, pid, false); err != nil {
		t.Error(err)
	}
}

// Procs maps PIDs to their start times, so that a PID used again by a new
// process does not count as the old one.
type Procs map[int]string

// Snapshot records pids with their start times.
func Snapshot(pids []int) Procs {
	p := Procs{}
	for _, pid := range pids {
		if st, ok := StartTime(pid); ok {
			p[pid] = st
		}
	}
	return p
}

// CheckGone fails t for each recorded process still running.
func (p Procs) CheckGone(t *testing.T) {
	t.Helper()
	if len(p) == 0 {
		t.Error("no processes were recorded")
	}
	for pid, st := range p {
		if now, ok := StartTime(pid); ok && now == st {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			t.Errorf("process %d (%s) left after Stop", pid, strings.TrimSpace(string(comm)))
		}
	}
}

// StartTime is field 22 of /proc/pid/stat, the process's start time.
func StartTime(pid int) (string, bool) {
	f, err := procStatFields(pid)
	if err != nil || len(f) < 20 {
		return "", false
	}
	return f[19], true
}

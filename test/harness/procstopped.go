package harness

import (
	"context"
	"fmt"
	"slices"
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

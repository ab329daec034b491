package fence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKillRealFreezerV1 kills real processes through the host's v1 freezer:
// one in a test cgroup, two in a child of it.
func TestKillRealFreezerV1(t *testing.T) {
	const root = "/sys/fs/cgroup"
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	h, err := DetectHierarchy(root)
	if err != nil || h.V2 {
		t.Skipf("needs a cgroup v1 freezer at %s/freezer (%+v, %v)", root, h, err)
	}
	dir := filepath.Join(root, "freezer", fmt.Sprintf("hangwatch-fence-test-%d", os.Getpid()))
	child := filepath.Join(dir, "child")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a freezer cgroup: %v", err)
	}
	t.Cleanup(func() { removeTestCgroup(t, dir, child) })
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var waits []chan error
	for _, cg := range []string{dir, child, child} {
		pid, wait := startSleep(t, cg)
		pids = append(pids, pid)
		waits = append(waits, wait)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	killed, err := Killer{H: h, Proc: "/proc"}.Kill(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pids)
	if !slices.Equal(killed, pids) {
		t.Errorf("killed %v, want %v", killed, pids)
	}
	for i, wait := range waits {
		checkKilled(t, ctx, pids[i], wait)
	}
	if left, err := subtreePids(dir); err != nil || len(left) != 0 {
		t.Errorf("after Kill the cgroup holds %v (%v); want none", left, err)
	}
	if s, _ := readTrimmed(filepath.Join(dir, "freezer.state")); s != "THAWED" {
		t.Errorf("freezer.state = %q, want THAWED", s)
	}
}

// startSleep starts `sleep 1000`, moves it into cgroup cg, and returns its
// pid and a channel that gets cmd.Wait's result.
func startSleep(t *testing.T, cg string) (int, chan error) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait := make(chan error, 1)
	go func() { wait <- cmd.Wait() }()
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("move pid %d into %s: %v", pid, cg, err)
	}
	return pid, wait
}

func checkKilled(t *testing.T, ctx context.Context, pid int, wait chan error) {
	t.Helper()
	select {
	case err := <-wait:
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("pid %d: Wait = %v; want killed", pid, err)
			return
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("pid %d: %v; want killed by SIGKILL", pid, err)
		}
	case <-ctx.Done():
		t.Errorf("pid %d was not reaped: %v", pid, ctx.Err())
	}
}

// removeTestCgroup thaws the test cgroups, moves any process left back to
// the root freezer cgroup, and removes them.
func removeTestCgroup(t *testing.T, dir, child string) {
	_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0)
	top := filepath.Join(filepath.Dir(dir), "cgroup.procs")
	if left, err := subtreePids(dir); err == nil {
		for _, pid := range left {
			_ = os.WriteFile(top, []byte(strconv.Itoa(pid)), 0)
		}
	}
	for _, d := range []string{child, dir} {
		var err error
		tick := time.NewTicker(10 * time.Millisecond) // EBUSY while a killed task leaves
		deadline := time.After(2 * time.Second)
	wait:
		for {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Errorf("remove test cgroup %s: %v", d, err)
				break wait
			}
		}
		tick.Stop()
	}
}

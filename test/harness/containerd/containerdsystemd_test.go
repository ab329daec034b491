package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// TestSystemdRestartsKilledContainerd runs containerd as systemd runs it on
// a node (containerd's own unit), SIGKILLs it, and checks that systemd
// starts it again and that the pods' containers ran on throughout
// (KillMode=process leaves the shims alone). Stop then leaves no process.
func TestSystemdRestartsKilledContainerd(t *testing.T) {
	systemd.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, sd, err := StartUnderSystemd(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	t.Logf("containerd %s under systemd %d ready in %v", bin.Version, sd.PID(), time.Since(start).Round(time.Millisecond))
	if _, err := c.CreatePods(ctx, 1, 2); err != nil {
		t.Fatalf("create pods: %v\n%s", err, c.logTail())
	}
	before := harness.RunningContainers(ctx, t, c.Runtime())
	if len(before) != 2 {
		t.Fatalf("running containers %v, want 2", before)
	}

	old := c.PID()
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", old)); filepath.Base(exe) != "containerd" {
		t.Fatalf("main PID %d is %q, not containerd", old, exe)
	}
	shims := harness.Snapshot(sd.ProcessesNamed("containerd-shim"))
	if len(shims) == 0 {
		t.Fatal("no containerd-shim below systemd")
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pid, err := sd.WaitMainPIDChange(ctx, Unit, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.WaitActive(ctx, Unit); err != nil {
		t.Fatalf("%v\n%s", err, c.logTail())
	}
	active := time.Since(killed)
	c.conn.RedialIfReplaced()
	if err := c.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := c.Runtime().Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatalf("Version after the restart: %v", err)
	}
	t.Logf("containerd %d killed; systemd started %d, active in %v, CRI ready in %v (%s %s)",
		old, pid, active.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), v.RuntimeName, v.RuntimeVersion)
	if got := c.PID(); got != pid {
		t.Errorf("PID() = %d, want the new main PID %d", got, pid)
	}
	if err := syscall.Kill(old, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("killed containerd %d still there: %v", old, err)
	}
	for p, st := range shims {
		if s, ok := harness.StartTime(p); !ok || s != st {
			t.Errorf("shim %d gone after the restart", p)
		}
	}
	if after := harness.RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after the restart %v, want %v", after, before)
	}

	harness.CheckFreezeThaw(ctx, t, pid, c.Freeze, c.Thaw) // they follow the new main process

	// A frozen containerd restarts through D-Bus on Socket, as a repair
	// would restart it (systemd follows its SIGTERM with a SIGCONT).
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	conn, err := systemd.Dial(ctx, sd.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	restart := time.Now()
	result := make(chan string, 1)
	if _, err := conn.RestartUnitContext(ctx, Unit, "replace", result); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-result:
		if r != "done" {
			t.Fatalf("restart job %s\n%s\n%s", r, sd.LogTail(20), c.logTail())
		}
	case <-ctx.Done():
		t.Fatalf("restart job: %v\n%s", ctx.Err(), sd.LogTail(20))
	}
	restarted := c.PID()
	if restarted == pid || restarted == 0 {
		t.Fatalf("main PID %d after the restart, was %d", restarted, pid)
	}
	c.conn.RedialIfReplaced()
	if err := c.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("frozen containerd %d restarted through D-Bus as %d, CRI ready in %v", pid, restarted, time.Since(restart).Round(time.Millisecond))
	if after := harness.RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after the D-Bus restart %v, want %v", after, before)
	}

	// StopRuntime and StartRuntime stop and start the unit.
	c.StopRuntime(true)
	if st, err := sd.ActiveState(ctx, Unit); err != nil || st != "inactive" {
		t.Errorf("after StopRuntime containerd is %q (%v), want inactive", st, err)
	}
	if pid := c.PID(); pid != 0 {
		t.Errorf("after StopRuntime main PID %d", pid)
	}
	if err := c.StartRuntime(ctx, bin); err != nil {
		t.Fatal(err)
	}
	if after := harness.RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after StopRuntime and StartRuntime %v, want %v", after, before)
	}

	procs := harness.Snapshot(sd.Processes())
	dirs := []string{c.Dir, sd.Dir}
	c.Stop()
	stopped = true
	procs.CheckGone(t)
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dir %s left: %v", d, err)
		}
	}
}

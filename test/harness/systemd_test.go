package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSystemdRunsOnlyTheTestsUnits boots systemd with one unit, checks it
// loaded nothing else that runs, restarts the unit's killed main process,
// and leaves neither a process, a cgroup nor a change to the host's
// /sys/fs/cgroup behind.
func TestSystemdRunsOnlyTheTestsUnits(t *testing.T) {
	RequireSystemd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hostCgroups := cgroupFSState(t)

	start := time.Now()
	sd, err := StartSystemd(ctx, map[string]string{"hw-sleep.service": `[Service]
ExecStart=/bin/sleep infinity
Restart=always
RestartSec=100ms
`})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			sd.Stop()
		}
	}()
	t.Logf("systemd %d ready in %v", sd.PID(), time.Since(start).Round(time.Millisecond))

	// Its /proc/sys is read-only: the sysctls it raises at boot are the
	// host's.
	mountinfo, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", sd.PID()))
	if err != nil {
		t.Fatal(err)
	}
	procSysRO := false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/proc/sys" {
			procSysRO = slices.Contains(strings.Split(f[5], ","), "ro")
		}
	}
	if !procSysRO {
		t.Error("/proc/sys is not read-only in systemd's mount namespace")
	}

	units, err := sd.Conn().ListUnitsContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, u.Name+"="+u.LoadState+","+u.ActiveState)
		switch {
		case slices.Contains([]string{"hw-sleep.service", harnessTarget, proxySocketUnit, proxyServiceUnit}, u.Name):
		case slices.Contains([]string{".mount", ".slice", ".scope", ".device"}, filepath.Ext(u.Name)):
			// Run nothing: the namespace's mounts and the devices they
			// name, -.slice, system.slice, init.scope.
		case u.LoadState == "not-found" && u.ActiveState == "inactive":
			// Named by the others' implicit dependencies (local-fs.target,
			// systemd-journald.socket...), with no unit file to load.
		default:
			t.Errorf("unit %s (%s, %s) is there", u.Name, u.LoadState, u.ActiveState)
		}
	}
	t.Logf("units: %s", strings.Join(names, " "))
	jobs, err := sd.Conn().ListJobsContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		t.Logf("job %d: %s %s %s", j.Id, j.Unit, j.JobType, j.Status)
	}

	if err := sd.WaitActive(ctx, "hw-sleep.service"); err != nil {
		t.Fatal(err)
	}
	old, err := sd.MainPID(ctx, "hw-sleep.service")
	if err != nil {
		t.Fatal(err)
	}
	// active as soon as systemd has forked it: the child runs systemd's
	// code until it has exec'd the unit's command
	var exe string
	Eventually(t, 10*time.Second, fmt.Sprintf("main PID %d to be sleep", old), func() bool {
		exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", old))
		return strings.HasSuffix(exe, "/sleep")
	}, Explaining(func() string { return fmt.Sprintf("it is %q", exe) }))
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pid, err := sd.WaitMainPIDChange(ctx, "hw-sleep.service", old)
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.WaitActive(ctx, "hw-sleep.service"); err != nil {
		t.Fatal(err)
	}
	t.Logf("main PID %d killed, %d started in %v", old, pid, time.Since(killed).Round(time.Millisecond))

	if err := sd.RestartUnit(ctx, "hw-sleep.service"); err != nil {
		t.Fatal(err)
	}
	if pid2, err := sd.MainPID(ctx, "hw-sleep.service"); err != nil || pid2 == pid || pid2 == 0 {
		t.Fatalf("after RestartUnit main PID %d (was %d): %v", pid2, pid, err)
	}

	procs := snapshot(sd.Processes())
	sd.Stop()
	stopped = true
	procs.checkGone(t)
	if _, err := os.Stat(sd.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("systemd's dir %s left: %v", sd.Dir, err)
	}
	if after := cgroupFSState(t); after != hostCgroups {
		t.Errorf("host's /sys/fs/cgroup changed:\nbefore %s\nafter  %s", hostCgroups, after)
	}
}

// TestSystemdRestartsKilledContainerd runs containerd as systemd runs it on
// a node (containerd's own unit), SIGKILLs it, and checks that systemd
// starts it again and that the pods' containers ran on throughout
// (KillMode=process leaves the shims alone). Stop then leaves no process.
func TestSystemdRestartsKilledContainerd(t *testing.T) {
	RequireSystemd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := ContainerdBinaries()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, sd, err := StartContainerdUnderSystemd(ctx, bin)
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
	before := RunningContainers(ctx, t, c.Runtime())
	if len(before) != 2 {
		t.Fatalf("running containers %v, want 2", before)
	}

	old := c.PID()
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", old)); filepath.Base(exe) != "containerd" {
		t.Fatalf("main PID %d is %q, not containerd", old, exe)
	}
	shims := snapshot(processesNamed(sd, "containerd-shim"))
	if len(shims) == 0 {
		t.Fatal("no containerd-shim below systemd")
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pid, err := sd.WaitMainPIDChange(ctx, ContainerdUnit, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.WaitActive(ctx, ContainerdUnit); err != nil {
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
		if s, ok := startTime(p); !ok || s != st {
			t.Errorf("shim %d gone after the restart", p)
		}
	}
	if after := RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after the restart %v, want %v", after, before)
	}

	CheckFreezeThaw(ctx, t, pid, c.Freeze, c.Thaw) // they follow the new main process

	// A frozen containerd restarts through D-Bus on Socket, as a repair
	// would restart it (systemd follows its SIGTERM with a SIGCONT).
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	conn, err := DialSystemd(ctx, sd.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	restart := time.Now()
	result := make(chan string, 1)
	if _, err := conn.RestartUnitContext(ctx, ContainerdUnit, "replace", result); err != nil {
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
	if after := RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after the D-Bus restart %v, want %v", after, before)
	}

	// StopRuntime and StartRuntime stop and start the unit.
	c.StopRuntime(true)
	if st, err := sd.ActiveState(ctx, ContainerdUnit); err != nil || st != "inactive" {
		t.Errorf("after StopRuntime containerd is %q (%v), want inactive", st, err)
	}
	if pid := c.PID(); pid != 0 {
		t.Errorf("after StopRuntime main PID %d", pid)
	}
	if err := c.StartRuntime(ctx, bin); err != nil {
		t.Fatal(err)
	}
	if after := RunningContainers(ctx, t, c.Runtime()); !slices.Equal(after, before) {
		t.Errorf("running containers after StopRuntime and StartRuntime %v, want %v", after, before)
	}

	procs := snapshot(sd.Processes())
	dirs := []string{c.Dir, sd.Dir}
	c.Stop()
	stopped = true
	procs.checkGone(t)
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dir %s left: %v", d, err)
		}
	}
}

// processesNamed are the processes below systemd whose command (comm,
// 15 characters at most) starts with name.
func processesNamed(sd *Systemd, name string) []int {
	var pids []int
	for _, pid := range sd.Processes() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.HasPrefix(strings.TrimSpace(string(comm)), name) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procs maps PIDs to their start times, so that a PID used again by a new
// process does not count as the old one.
type procs map[int]string

func snapshot(pids []int) procs {
	p := procs{}
	for _, pid := range pids {
		if st, ok := startTime(pid); ok {
			p[pid] = st
		}
	}
	return p
}

func (p procs) checkGone(t *testing.T) {
	t.Helper()
	if len(p) == 0 {
		t.Error("no processes were recorded")
	}
	for pid, st := range p {
		if now, ok := startTime(pid); ok && now == st {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			t.Errorf("process %d (%s) left after Stop", pid, strings.TrimSpace(string(comm)))
		}
	}
}

// startTime is field 22 of /proc/pid/stat, the process's start time.
func startTime(pid int) (string, bool) {
	f, err := procStatFields(pid)
	if err != nil || len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// cgroupFSState is the host's /sys/fs/cgroup: its entries and its file
// system's options (systemd remounts the tmpfs it finds there).
func cgroupFSState(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	opts := ""
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/sys/fs/cgroup" {
			opts = line[strings.Index(line, " - ")+3:]
		}
	}
	return strings.Join(names, ",") + " [" + opts + "]"
}

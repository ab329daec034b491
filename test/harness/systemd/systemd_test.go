package systemd

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

	"github.com/hangwatch/hangwatch/test/harness"
)

// TestSystemdRunsOnlyTheTestsUnits boots systemd with one unit, checks it
// loaded nothing else that runs, restarts the unit's killed main process,
// and leaves neither a process, a cgroup nor a change to the host's
// /sys/fs/cgroup behind.
func TestSystemdRunsOnlyTheTestsUnits(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hostCgroups := cgroupFSState(t)

	start := time.Now()
	sd, err := Start(ctx, map[string]string{"hw-sleep.service": `[Service]
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
	harness.Eventually(t, 10*time.Second, fmt.Sprintf("main PID %d to be sleep", old), func() bool {
		exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", old))
		return strings.HasSuffix(exe, "/sleep")
	}, harness.Explaining(func() string { return fmt.Sprintf("it is %q", exe) }))
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

	procs := harness.Snapshot(sd.Processes())
	sd.Stop()
	stopped = true
	procs.CheckGone(t)
	if _, err := os.Stat(sd.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("systemd's dir %s left: %v", sd.Dir, err)
	}
	if after := cgroupFSState(t); after != hostCgroups {
		t.Errorf("host's /sys/fs/cgroup changed:\nbefore %s\nafter  %s", hostCgroups, after)
	}
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

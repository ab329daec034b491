package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// SystemdBinary is the systemd the harness runs (Debian's package).
const SystemdBinary = "/lib/systemd/systemd"

// socketProxyBinary is systemd's socket proxy, which relays the test's
// D-Bus connections to systemd's private socket (see Socket).
const socketProxyBinary = "/lib/systemd/systemd-socket-proxyd"

// harnessTarget is the target systemd boots into: it wants every unit the
// test gives StartSystemd and the socket proxy's socket, nothing else.
const harnessTarget = "hangwatch-harness.target"

// The socket proxy's units: systemd listens on Dir/private.sock for it and
// starts the proxy on the first connection.
const (
	proxySocketUnit  = "hangwatch-harness-private.socket"
	proxyServiceUnit = "hangwatch-harness-private.service"
)

// Systemd is a real systemd started by the harness as PID 1 of a PID, mount
// and UTS namespace of its own, with only the test's units. It is started
// through unshare(1); everything it starts lives in its PID namespace, so
// killing it (the namespace's init) ends all of it, and the mounts made in
// its mount namespace (containerd's, the private /run) go with it.
//
// What it shares with the host and how the harness keeps it off the host's
// state:
//   - /run is a tmpfs of its own: its D-Bus socket, notify socket and
//     runtime units are there, and it never finds the host's system bus.
//   - /sys/fs/cgroup is a tmpfs of its own holding binds of the host's
//     hierarchies: systemd remounts that tmpfs read-only (with its own
//     size) and mounts the hierarchies the host leaves unmounted, which on
//     the host's own tmpfs would change the host (the remount is of the
//     file system, not of the mount).
//   - its cgroup root is a new cgroup in the name=systemd and unified
//     hierarchies only (hangwatch-<Dir's name>), so its units' cgroups are
//     made there and it manages no controller: the processes stay in the
//     test's memory, cpu and pids cgroups, as the harness's own containerd
//     does. Stop removes that cgroup tree.
//   - /proc/sys is read-only in its namespace: systemd raises sysctls at
//     boot, container or not (net.unix.max_dgram_qlen to 512, fs.file-max
//     and fs.nr_open to their maximum), which are the host's (the first is
//     the host network namespace's, the others the kernel's).
//   - the UTS namespace is its own (it sets the hostname at boot).
//   - it is told it runs in a container ($container, as systemd-nspawn
//     tells it), so it skips what a machine's init does to the kernel at
//     boot (security policies, the clock's time warp, early API mounts),
//     and it runs no generators ($SYSTEMD_GENERATOR_PATH is an empty dir),
//     so the host's fstab, getty and SysV units never appear. The boot
//     script makes / shared in its mount namespace, as systemd does on a
//     node (after unshare(1) made it private: no peer of the host's).
//   - its own log goes to Dir/systemd.log: systemd logs to /dev/kmsg, on
//     which its mount namespace has a FIFO the harness copies from (not the
//     host's console, which /dev/console is; not a file, which processes
//     opening it anew would overwrite from its start). Units log nowhere
//     unless they say so (--default-standard-output=null: there is no
//     journal), as containerd's unit does to a file.
//   - the network namespace is the host's, like a node's containerd, and
//     the file system is the host's but for the mounts above: containerd's
//     socket in a temp dir is reachable from the test.
//
// The test cannot talk to systemd's private socket
// (/run/systemd/private) itself, though /proc/PID/root/run/systemd/private
// reaches it: systemd refuses a private connection whose peer's PID it
// cannot see (SO_PEERCRED gives PID 0 for a process outside its PID
// namespace; bus_check_peercred fails with ENODATA and systemd logs
// "Incoming private connection from unprivileged client, refusing: No
// data available"). So the harness adds a socket unit listening on
// Dir/private.sock and systemd-socket-proxyd, run by systemd inside the
// namespace, relaying its connections to /run/systemd/private as a peer
// systemd sees (root, a PID of its namespace). Socket is that path.
type Systemd struct {
	Dir      string // temp dir: units/, systemd.log (the manager's log)
	cgroup   string // name of its cgroup root
	proc     *process
	pid      int // systemd's PID on the host
	level    int // its PID namespace's level: the index into NSpid
	conn     *sddbus.Conn
	logFIFO  *os.File      // read end of systemd's /dev/kmsg
	logDone  chan struct{} // closed when the copy to systemd.log ends
	stopOnce sync.Once
}

// bootScript runs as PID 1 of the new namespaces before it becomes
// systemd; unshare(1) has already made every mount private, so nothing it
// mounts reaches the host.
const bootScript = `set -e
for p in $HW_CGROUP_PROCS; do echo 0 > "$p"; done
mount -t tmpfs -o mode=755 tmpfs /run
if [ -n "$HW_CGROUP_TMPFS" ]; then
  mkdir /run/host-cgroup
  mount --rbind /sys/fs/cgroup /run/host-cgroup
  mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  for d in /run/host-cgroup/*; do
    if [ ! -L "$d" ] && mountpoint -q "$d"; then
      mkdir "/sys/fs/cgroup/${d##*/}"
      mount --bind "$d" "/sys/fs/cgroup/${d##*/}"
    fi
  done
  umount -l /run/host-cgroup
  rmdir /run/host-cgroup
fi
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --make-rshared /
mount --bind "$HW_LOG" /dev/kmsg
exec "$HW_SYSTEMD" --unit=` + harnessTarget + ` --log-target=kmsg --show-status=no \
  --default-standard-output=null --default-standard-error=inherit
`

// RequireSystemdParts reports why StartSystemd cannot run here, or nil.
func RequireSystemdParts() error {
	if os.Geteuid() != 0 {
		return errors.New("systemd as PID 1 of a namespace needs root")
	}
	for _, bin := range []string{SystemdBinary, socketProxyBinary} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("no %s (apt-get install systemd): %w", bin, err)
		}
	}
	for _, bin := range []string{"unshare", "mountpoint", "mount", "umount", "env", "sh"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found (util-linux): %w", bin, err)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/systemd"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
			return fmt.Errorf("no name=systemd cgroup hierarchy and no cgroup v2 at /sys/fs/cgroup: %w", err)
		}
	}
	return nil
}

// StartSystemd starts systemd with units (file name -> content) in a PID
// and mount namespace of its own and waits until its private D-Bus socket
// answers and its first transaction is done (every unit given started,
// or failed). Every unit gets DefaultDependencies=no from a drop-in, as
// the units of a boot (sysinit.target and the rest) are not there;
// templates (names with @) are loaded but not started.
func StartSystemd(ctx context.Context, units map[string]string) (*Systemd, error) {
	if err := RequireSystemdParts(); err != nil {
		return nil, err
	}
	for _, name := range []string{harnessTarget, proxySocketUnit, proxyServiceUnit} {
		if _, ok := units[name]; ok {
			return nil, fmt.Errorf("unit %s is the harness's own", name)
		}
	}
	dir, err := os.MkdirTemp("", "hws-")
	if err != nil {
		return nil, err
	}
	s := &Systemd{Dir: dir, cgroup: "hangwatch-" + filepath.Base(dir)}
	if err := s.start(ctx, units); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Systemd) start(ctx context.Context, units map[string]string) error {
	unitDir := filepath.Join(s.Dir, "units")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "empty"), 0o755); err != nil {
		return err
	}
	fifo := filepath.Join(s.Dir, "kmsg")
	if err := s.copyLog(fifo); err != nil {
		return err
	}
	var wants []string
	for name, body := range units {
		if err := writeUnit(unitDir, name, body); err != nil {
			return err
		}
		if !strings.Contains(name, "@") {
			wants = append(wants, name)
		}
	}
	sort.Strings(wants)
	own := map[string]string{
		harnessTarget: "[Unit]\nDescription=hangwatch test harness\nWants=" +
			strings.Join(append([]string{proxySocketUnit}, wants...), " ") + "\n",
		proxySocketUnit: "[Unit]\nDescription=systemd's private D-Bus socket for the test\n" +
			"[Socket]\nListenStream=" + s.Socket() + "\nSocketMode=0600\nService=" + proxyServiceUnit + "\n",
		proxyServiceUnit: "[Unit]\nDescription=relay to systemd's private D-Bus socket\n" +
			"Requires=" + proxySocketUnit + "\nAfter=" + proxySocketUnit + "\n" +
			"[Service]\nExecStart=" + socketProxyBinary + " /run/systemd/private\n",
	}
	for name, body := range own {
		if err := writeUnit(unitDir, name, body); err != nil {
			return err
		}
	}

	procs, tmpfs, err := s.makeCgroup()
	if err != nil {
		return err
	}
	args := []string{
		"-i",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"container=hangwatch-harness",
		"SYSTEMD_UNIT_PATH=" + unitDir,
		"SYSTEMD_GENERATOR_PATH=" + filepath.Join(s.Dir, "empty"),
		"SYSTEMD_ENVIRONMENT_GENERATOR_PATH=" + filepath.Join(s.Dir, "empty"),
		"HW_CGROUP_PROCS=" + strings.Join(procs, " "),
		"HW_CGROUP_TMPFS=" + tmpfs,
		"HW_LOG=" + fifo,
		"HW_SYSTEMD=" + SystemdBinary,
	}
	args = append(args, "unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--uts", "sh", "-c", bootScript)
	if s.proc, err = startProcess(s.Dir, "unshare", "env", args...); err != nil {
		return err
	}
	return s.waitReady(ctx)
}

// makeCgroup makes the cgroup systemd runs in, in the hierarchies that
// track processes (name=systemd and the unified one; on a cgroup v2 host
// the only one), and returns the cgroup.procs files its boot script moves
// into, and "1" when /sys/fs/cgroup is a tmpfs (cgroup v1 or hybrid).
func (s *Systemd) makeCgroup() ([]string, string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, "", fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	const tmpfsMagic = 0x01021994
	var hierarchies []string
	tmpfs := ""
	if st.Type == tmpfsMagic {
		tmpfs = "1"
		for _, h := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil {
				hierarchies = append(hierarchies, h)
			}
		}
	} else {
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	var procs []string
	for _, h := range hierarchies {
		dir := filepath.Join(h, s.cgroup)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("make systemd's cgroup: %w", err)
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	if len(procs) == 0 {
		return nil, "", errors.New("no name=systemd or unified cgroup hierarchy under /sys/fs/cgroup")
	}
	return procs, tmpfs, nil
}

// copyLog makes the FIFO systemd logs to and copies what comes through it
// to systemd.log until Stop.
func (s *Systemd) copyLog(fifo string) error {
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return fmt.Errorf("mkfifo %s: %w", fifo, err)
	}
	// Read and write: opening does not wait for a writer, and reads never
	// see an end between writers.
	in, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	out, err := os.Create(s.logPath())
	if err != nil {
		_ = in.Close()
		return err
	}
	s.logFIFO, s.logDone = in, make(chan struct{})
	go func() {
		_, _ = io.Copy(out, in)
		_ = out.Close()
		close(s.logDone)
	}()
	return nil
}

// stopLog drains systemd's log FIFO, once no one writes to it, and ends
// the copy.
func (s *Systemd) stopLog() {
	if s.logFIFO == nil {
		return
	}
	if err := s.logFIFO.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err == nil {
		select {
		case <-s.logDone:
		case <-time.After(5 * time.Second):
		}
	}
	_ = s.logFIFO.Close()
}

// waitReady waits until systemd's private socket answers and its first
// transaction is done (at most two minutes).
func (s *Systemd) waitReady(ctx context.Context) error {
	var last error
	_, err := Poll(ctx, 2*time.Minute, "systemd ready", func() bool {
		last = s.tryReady(ctx)
		return last == nil
	}, Every(20*time.Millisecond), UnlessExited(s.proc), Explaining(func() string {
		return fmt.Sprintf("last: %v\n%s\n%s", last, s.proc.logTail(10), s.LogTail(20))
	}))
	return err
}

func (s *Systemd) tryReady(ctx context.Context) error {
	if s.pid == 0 {
		pid := childOf(s.proc.PID())
		if pid == 0 {
			return errors.New("unshare has not forked yet")
		}
		nspid, err := nsPIDs(pid)
		if err != nil {
			return err
		}
		s.pid, s.level = pid, len(nspid)-1
	}
	if s.conn == nil {
		if _, err := os.Stat(s.Socket()); err != nil {
			return err
		}
		dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := DialSystemd(dialCtx, s.Socket())
		cancel()
		if err != nil {
			return err
		}
		s.conn = conn
	}
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.conn.SystemStateContext(callCtx)
	if err != nil {
		return fmt.Errorf("SystemState: %w", err)
	}
	if state, _ := st.Value.Value().(string); state == "initializing" || state == "starting" {
		return fmt.Errorf("system state %s", state)
	}
	return nil
}

// DialSystemd connects to a systemd's private D-Bus socket (no bus daemon:
// EXTERNAL auth as this user, no Hello). ctx bounds the dial and the auth
// only.
func DialSystemd(ctx context.Context, socket string) (*sddbus.Conn, error) {
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial("unix:path=" + socket)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		err = c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))})
		if !stop() {
			return nil, fmt.Errorf("auth on %s: %w", socket, ctx.Err())
		}
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("auth on %s: %w", socket, err)
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("connect to systemd at %s: %w", socket, err)
	}
	return conn, nil
}

// PID is systemd's process ID on the host.
func (s *Systemd) PID() int { return s.pid }

// Socket is the path on the host of a socket relayed to systemd's private
// D-Bus socket, /run/systemd/private, which refuses the test's own
// connections (see Systemd). Talk to it as to the private socket: no bus
// daemon, EXTERNAL auth, no Hello (DialSystemd).
func (s *Systemd) Socket() string { return filepath.Join(s.Dir, "private.sock") }

// Conn is the harness's own D-Bus connection to systemd.
func (s *Systemd) Conn() *sddbus.Conn { return s.conn }

func (s *Systemd) logPath() string { return filepath.Join(s.Dir, "systemd.log") }

// LogTail returns the last n lines of systemd's own log: units started,
// main processes exited, restarts scheduled.
func (s *Systemd) LogTail(n int) string { return fileTail("systemd", s.logPath(), n) }

// MainPID is unit's main process as a host PID (systemd's MainPID is a PID
// in its namespace), or 0 when the unit has none.
func (s *Systemd) MainPID(ctx context.Context, unit string) (int, error) {
	prop, err := s.conn.GetServicePropertyContext(ctx, unit, "MainPID")
	if err != nil {
		return 0, fmt.Errorf("MainPID of %s: %w", unit, err)
	}
	nsPID, ok := prop.Value.Value().(uint32)
	if !ok {
		return 0, fmt.Errorf("MainPID of %s is %v", unit, prop.Value)
	}
	if nsPID == 0 {
		return 0, nil
	}
	return s.HostPID(int(nsPID))
}

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

// ActiveState is unit's ActiveState (active, activating, failed, ...).
func (s *Systemd) ActiveState(ctx context.Context, unit string) (string, error) {
	prop, err := s.conn.GetUnitPropertyContext(ctx, unit, "ActiveState")
	if err != nil {
		return "", fmt.Errorf("ActiveState of %s: %w", unit, err)
	}
	state, _ := prop.Value.Value().(string)
	return state, nil
}

// WaitActive polls until unit is active (for Type=notify, its main process
// said READY=1), and fails when it is failed. Right after its main process
// is killed a unit is still active for a moment, until systemd reaps it:
// wait for WaitMainPIDChange first.
func (s *Systemd) WaitActive(ctx context.Context, unit string) error {
	return s.poll(ctx, func(ctx context.Context) (bool, error) {
		state, err := s.ActiveState(ctx, unit)
		if err != nil {
			return false, err
		}
		if state == "failed" {
			return false, fmt.Errorf("%s failed\n%s", unit, s.LogTail(20))
		}
		return state == "active", nil
	}, func() string { return unit + " not active" })
}

// WaitMainPIDChange polls until unit has a main process other than the
// host PID old, and returns its host PID. The new process may not be ready
// yet: WaitActive waits for that.
func (s *Systemd) WaitMainPIDChange(ctx context.Context, unit string, old int) (int, error) {
	var pid int
	var last error
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		// A main PID that has just exited does not translate: poll on.
		pid, last = s.MainPID(ctx, unit)
		return last == nil && pid != 0 && pid != old, nil
	}, func() string { return fmt.Sprintf("main PID of %s still %d (last: %v)", unit, old, last) })
	return pid, err
}

// StartUnit starts unit and waits for the job's result.
func (s *Systemd) StartUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "start", unit, s.conn.StartUnitContext)
}

// StopUnit stops unit and waits for the job's result.
func (s *Systemd) StopUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "stop", unit, s.conn.StopUnitContext)
}

// RestartUnit restarts unit and waits for the job's result.
func (s *Systemd) RestartUnit(ctx context.Context, unit string) error {
	return s.job(ctx, "restart", unit, s.conn.RestartUnitContext)
}

func (s *Systemd) job(ctx context.Context, what, unit string, enqueue func(context.Context, string, string, chan<- string) (int, error)) error {
	done := make(chan string, 1)
	if _, err := enqueue(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", what, unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s %s: job %s\n%s", what, unit, result, s.LogTail(20))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w\n%s", what, unit, ctx.Err(), s.LogTail(20))
	}
}

// SetUnit writes unit (a new one or a new version) and has systemd reload
// its units, as `systemctl daemon-reload` does.
func (s *Systemd) SetUnit(ctx context.Context, name, content string) error {
	if err := writeUnit(filepath.Join(s.Dir, "units"), name, content); err != nil {
		return err
	}
	if err := s.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reload systemd's units: %w", err)
	}
	return nil
}

// writeUnit writes unit name into dir with a drop-in setting
// DefaultDependencies=no.
func writeUnit(dir, name, content string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("bad unit name %q", name)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		return err
	}
	dropIn := filepath.Join(dir, name+".d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dropIn, "10-hangwatch-harness.conf"), []byte("[Unit]\nDefaultDependencies=no\n"), 0o644)
}

// poll calls check until it is done or fails, systemd exits or ctx ends
// (at most five minutes); what says what is awaited.
func (s *Systemd) poll(ctx context.Context, check func(context.Context) (bool, error), what func() string) error {
	var checkErr error
	_, err := Poll(ctx, 5*time.Minute, "systemd", func() bool {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var done bool
		done, checkErr = check(callCtx)
		return done || checkErr != nil
	}, UnlessExited(s.proc), Explaining(func() string { return what() + "\n" + s.LogTail(20) }))
	if checkErr != nil {
		return checkErr
	}
	return err
}

// Stop kills systemd by PID, which, as the init of its PID namespace,
// takes every process in it and below it along (the kernel kills them and
// waits for them before systemd is reaped), waits until unshare has reaped
// it, removes systemd's cgroups and Dir. Calling it again does nothing.
func (s *Systemd) Stop() {
	s.stopOnce.Do(func() {
		if s.conn != nil {
			s.conn.Close()
		}
		if s.proc != nil {
			if s.pid != 0 {
				_ = syscall.Kill(s.pid, syscall.SIGKILL)
			}
			// unshare exits when its child does. Else (systemd not found
			// yet) stop it: with --kill-child its death kills the child.
			select {
			case <-s.proc.exited:
			case <-time.After(10 * time.Second):
				s.proc.stop(10 * time.Second)
			}
		}
		s.stopLog()
		s.removeCgroup()
		_ = os.RemoveAll(s.Dir)
	})
}

// removeCgroup removes systemd's cgroup tree in every hierarchy, deepest
// first, polling for up to ten seconds while cgroups are still busy.
func (s *Systemd) removeCgroup() {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", s.cgroup))
	roots = append(roots, filepath.Join("/sys/fs/cgroup", s.cgroup))
	// Cgroups still busy after ten seconds are left behind.
	_, _ = Poll(context.Background(), 10*time.Second, "systemd's cgroups removed", func() bool {
		busy := false
		for _, root := range roots {
			var dirs []string
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			slices.Reverse(dirs)
			for _, d := range dirs {
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
					busy = true
				}
			}
		}
		return !busy
	})
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

// fileTail returns the last n lines of the log at path, headed by name.
func fileTail(name, path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return name + " log:\n" + strings.Join(lines, "\n")
}

package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/hangwatch/hangwatch/test/harness"
)

// Binary is the systemd the harness runs (Debian's package).
const Binary = "/lib/systemd/systemd"

// harnessTarget is the target systemd boots into: it wants every unit the
// test gives Start and the socket proxy's socket, nothing else.
const harnessTarget = "hangwatch-harness.target"

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
//     StartWithOwnCgroups gives it instead a cgroup root in every
//     hierarchy, below the test's own cgroups, and a cgroup namespace
//     rooted there with each hierarchy mounted anew: it manages every
//     controller, as on a node, and a unit's cgroup has the path it has
//     on a node (kubepods.slice at the root), as it and its services see
//     it.
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
//   - its own log goes to Dir/systemd.log: systemd logs to /dev/console,
//     on which its mount namespace has a FIFO the harness copies from (not
//     a file, which processes opening it anew would overwrite from its
//     start). /dev/kmsg is the host's, as on a node: a pod's hostPath of
//     it (the agent's, type CharDevice) and the kubelet's OOM watcher find
//     the kernel's log there. Units log nowhere
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
	Dir    string // temp dir: units/, systemd.log (the manager's log)
	cgroup string // name of its cgroup root
	// ownCgroups: its cgroup root is in every hierarchy, and it runs in a
	// cgroup namespace of its own there (StartWithOwnCgroups).
	ownCgroups bool
	proc       *harness.Process
	pid        int // systemd's PID on the host
	level      int // its PID namespace's level: the index into NSpid
	conn       *sddbus.Conn
	logFIFO    *os.File      // read end of systemd's /dev/kmsg
	logDone    chan struct{} // closed when the copy to systemd.log ends
	stopOnce   sync.Once
}

// bootScript runs as PID 1 of the new namespaces before it becomes
// systemd; unshare(1) has already made every mount private, so nothing it
// mounts reaches the host. First it detaches its copies of other tests'
// kubelets' pod volumes and CSI mounts (under a kubelet's root/pods/ and
// root/plugins/ in the temp dir, $HW_TMP), which the copy would otherwise
// hold after the host unmounts them (a fence test's check of every mount
// namespace found a pod's tmpfs held by one); the rest stays (a test's own
// FUSE server, which its units use). It moves into systemd's cgroups and runs
// bootScript2, in a cgroup namespace of its own with HW_CGROUPNS
// (ownCgroupsScript).
const bootScript = `set -e
for m in $(awk -v p="${HW_TMP%/}/" 'index($5, p) == 1 && $5 ~ /\/root\/(pods|plugins)\// {print $5}' /proc/self/mountinfo | sort -r); do
  umount -l "$m" 2>/dev/null || true
done
for p in $HW_CGROUP_PROCS; do echo 0 > "$p"; done
if [ -n "$HW_CGROUPNS" ]; then
  sh -c "$HW_OWN_CGROUPS" own-cgroups move $$
  exec unshare --cgroup sh -c "$HW_BOOT2"
fi
exec sh -c "$HW_BOOT2"
`

// bootScript2 mounts systemd's /run, its /sys/fs/cgroup (the host's
// hierarchies bound into a tmpfs of its own; with HW_CGROUPNS each
// hierarchy mounted anew in its cgroup namespace, with the symbolic links
// systemd makes for joined ones), its read-only /proc/sys and its
// /dev/kmsg, and becomes systemd.
const bootScript2 = `set -e
mount -t tmpfs -o mode=755 tmpfs /run
if [ -n "$HW_CGROUPNS" ]; then
  mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  while IFS=: read -r id ctrls path; do
    if [ -z "$ctrls" ]; then
      mkdir /sys/fs/cgroup/unified
      mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
      continue
    fi
    name=${ctrls#name=}; opts=$ctrls
    [ "$name" = "$ctrls" ] || opts=none,$ctrls
    mkdir "/sys/fs/cgroup/$name"
    mount -t cgroup -o "$opts" cgroup "/sys/fs/cgroup/$name"
    case $name in *,*) for c in $(echo "$name" | tr , ' '); do ln -s "$name" "/sys/fs/cgroup/$c"; done;; esac
  done < /proc/self/cgroup
elif [ -n "$HW_CGROUP_TMPFS" ]; then
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
mount --bind "$HW_LOG" /dev/console
exec "$HW_SYSTEMD" --unit=` + harnessTarget + ` --log-target=console --show-status=no \
  --default-standard-output=null --default-standard-error=inherit
`

// RequireParts reports why Start cannot run here, or nil.
func RequireParts() error {
	if os.Geteuid() != 0 {
		return errors.New("systemd as PID 1 of a namespace needs root")
	}
	for _, bin := range []string{Binary, socketProxyBinary} {
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

// Start starts systemd with units (file name -> content) in a PID
// and mount namespace of its own and waits until its private D-Bus socket
// answers and its first transaction is done (every unit given started,
// or failed). Every unit gets DefaultDependencies=no from a drop-in, as
// the units of a boot (sysinit.target and the rest) are not there;
// templates (names with @) are loaded but not started.
func Start(ctx context.Context, units map[string]string) (*Systemd, error) {
	return startSystemd(ctx, units, false)
}

// StartWithOwnCgroups is Start with a cgroup tree of its
// own, as on a node (ownCgroupsScript): systemd manages every controller
// there, and its units' cgroups (a kubelet's kubepods.slice made over
// D-Bus with the systemd cgroup driver) have the paths a node's have, as
// it and its services see them.
func StartWithOwnCgroups(ctx context.Context, units map[string]string) (*Systemd, error) {
	return startSystemd(ctx, units, true)
}

func startSystemd(ctx context.Context, units map[string]string, ownCgroups bool) (*Systemd, error) {
	if err := RequireParts(); err != nil {
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
	s := &Systemd{Dir: dir, cgroup: "hangwatch-" + filepath.Base(dir), ownCgroups: ownCgroups}
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
		"HW_BOOT2=" + bootScript2,
		"HW_LOG=" + fifo,
		"HW_SYSTEMD=" + Binary,
		"HW_TMP=" + os.TempDir(),
	}
	if s.ownCgroups {
		args = append(args, s.ownCgroupsEnv()...)
	}
	args = append(args, "unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--uts", "sh", "-c", bootScript)
	if s.proc, err = harness.StartProcess(s.Dir, "unshare", "env", args...); err != nil {
		return err
	}
	return s.waitReady(ctx)
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
			case <-s.proc.Exited():
			case <-time.After(10 * time.Second):
				s.proc.Stop(10 * time.Second)
			}
		}
		s.stopLog()
		s.removeCgroup()
		_ = os.RemoveAll(s.Dir)
	})
}

// Exited is closed once systemd (PID 1 of its namespaces) has exited.
func (s *Systemd) Exited() <-chan struct{} { return s.proc.Exited() }

// CgroupRoot is the name of systemd's cgroup root, below the test's own
// cgroups in each hierarchy.
func (s *Systemd) CgroupRoot() string { return s.cgroup }

// ProcessesNamed are the processes below systemd whose command (comm,
// 15 characters at most) starts with name.
func (s *Systemd) ProcessesNamed(name string) []int {
	var pids []int
	for _, pid := range s.Processes() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.HasPrefix(strings.TrimSpace(string(comm)), name) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Require skips a test that runs systemd (Start) where it
// cannot: not root, or no systemd or util-linux. Under CI, where the test
// command installs Debian's systemd, either is a failure.
func Require(t testing.TB) {
	t.Helper()
	harness.RequireRealParts(t)
	if err := RequireParts(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("systemd tests need systemd and util-linux (hack/lib.sh installs them): %v", err)
		}
		t.Skipf("systemd tests need systemd and util-linux: %v", err)
	}
}

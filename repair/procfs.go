package repair

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Procfs reads processes from a /proc, the host's when hangwatch shares
// the host's PID namespace.
type Procfs struct{ Root string }

// HostProc is /proc.
var HostProc = Procfs{Root: "/proc"}

// PeerPID is the PID, in hangwatch's PID namespace, of the process that
// listens on the Unix socket at path (SO_PEERCRED). It is 0 when that
// process is outside hangwatch's PID namespace.
func PeerPID(path string, timeout time.Duration) (int, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return 0, fmt.Errorf("the process behind %s: %w", path, err)
	}
	defer func() { _ = c.Close() }()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("the process behind %s: %w", path, err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("the process behind %s: %w", path, err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("the process behind %s: SO_PEERCRED: %w", path, credErr)
	}
	return int(cred.Pid), nil
}

// State is a process's state letter in /proc/PID/stat: R, S, D, T, Z...
func (p Procfs) State(pid int) (byte, error) {
	raw, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("state of PID %d: %w", pid, err)
	}
	return parseStatState(raw)
}

// parseStatState finds the state after the command name, which may hold
// spaces and parentheses: the state follows the last ')'.
func parseStatState(raw []byte) (byte, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 || i+2 >= len(raw) || raw[i+1] != ' ' {
		return 0, fmt.Errorf("/proc/PID/stat %q: no state after the command name", truncate(raw))
	}
	return raw[i+2], nil
}

// NSPIDs is the process's PID in hangwatch's PID namespace and in each
// namespace nested below it, outermost first (the NSpid line).
func (p Procfs) NSPIDs(pid int) ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "status"))
	if err != nil {
		return nil, fmt.Errorf("PID namespaces of PID %d: %w", pid, err)
	}
	return parseNSpid(raw)
}

func parseNSpid(raw []byte) ([]int, error) {
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		var out []int
		for _, f := range strings.Fields(rest) {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("NSpid %q: %q is not a PID", strings.TrimSpace(rest), f)
			}
			out = append(out, n)
		}
		if len(out) == 0 {
			break
		}
		return out, nil
	}
	return nil, errors.New("status has no NSpid line")
}

// ToNamespaceOf is pid (in hangwatch's namespace) as the process ref
// (systemd) sees it.
func (p Procfs) ToNamespaceOf(pid, ref int) (int, error) {
	refs, err := p.NSPIDs(ref)
	if err != nil {
		return 0, err
	}
	ids, err := p.NSPIDs(pid)
	if err != nil {
		return 0, err
	}
	if len(ids) < len(refs) {
		return 0, fmt.Errorf("PID %d is outside the PID namespace of PID %d", pid, ref)
	}
	return ids[len(refs)-1], nil
}

// FromNamespaceOf is the PID in hangwatch's namespace of the process that
// ref's namespace calls nsPID.
func (p Procfs) FromNamespaceOf(nsPID, ref int) (int, error) {
	refs, err := p.NSPIDs(ref)
	if err != nil {
		return 0, err
	}
	if len(refs) == 1 {
		return nsPID, nil
	}
	pids, err := p.pids()
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		ids, err := p.NSPIDs(pid)
		if err == nil && len(ids) >= len(refs) && ids[len(refs)-1] == nsPID && p.sameNamespace(pid, ref, len(refs)) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process is PID %d in the PID namespace of PID %d", nsPID, ref)
}

// sameNamespace tells whether pid lies in ref's PID namespace: the
// namespace depth(ref) levels down from ours. Two sibling namespaces can
// hold the same number, so the namespace of pid's ancestor at that level
// must be ref's.
func (p Procfs) sameNamespace(pid, ref, depth int) bool {
	for cur := pid; cur > 0; {
		ids, err := p.NSPIDs(cur)
		if err != nil || len(ids) < depth {
			return false
		}
		if len(ids) == depth {
			a, errA := os.Readlink(filepath.Join(p.Root, strconv.Itoa(cur), "ns", "pid"))
			b, errB := os.Readlink(filepath.Join(p.Root, strconv.Itoa(ref), "ns", "pid"))
			return errA == nil && errB == nil && a == b
		}
		cur = p.parent(cur)
	}
	return false
}

func (p Procfs) parent(pid int) int {
	raw, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// ThreadInD is the first thread of pid in uninterruptible sleep (D), and
// whether there is one: a Go runtime wedged in the kernel has its leader
// in S and the stuck thread in D, and a SIGKILL cannot complete while it
// is.
func (p Procfs) ThreadInD(pid int) (int, bool, error) {
	dir := filepath.Join(p.Root, strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false, fmt.Errorf("threads of PID %d: %w", pid, err)
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // a thread that exited meanwhile
		}
		if st, err := parseStatState(raw); err == nil && st == 'D' {
			return tid, true, nil
		}
	}
	return 0, false, nil
}

// TCPListener is the PID, in hangwatch's PID namespace, of a process that
// holds the socket listening on TCP port (IPv4 or IPv6) in hangwatch's
// network namespace; 0 when none is found.
func (p Procfs) TCPListener(port int) (int, error) {
	var inodes []string
	for _, name := range []string{"tcp", "tcp6"} {
		raw, err := os.ReadFile(filepath.Join(p.Root, "net", name))
		if err != nil {
			continue // no IPv6, say
		}
		inodes = append(inodes, listeningInodes(raw, port)...)
	}
	if len(inodes) == 0 {
		return 0, nil
	}
	return p.socketHolder(inodes)
}

// listeningInodes are the inodes of the sockets in /proc/net/tcp's text
// that listen (state 0A) on port.
func listeningInodes(raw []byte, port int) []string {
	var out []string
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		n, err := strconv.ParseUint(hexPort, 16, 16)
		if ok && err == nil && int(n) == port && f[9] != "0" {
			out = append(out, f[9])
		}
	}
	return out
}

// socketHolder is the first process with a descriptor on one of the
// socket inodes.
func (p Procfs) socketHolder(inodes []string) (int, error) {
	pids, err := p.pids()
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		dir := filepath.Join(p.Root, strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") && slices.Contains(inodes, link[len("socket:["):len(link)-1]) {
				return pid, nil
			}
		}
	}
	return 0, nil
}

// pids lists the processes in the /proc.
func (p Procfs) pids() ([]int, error) {
	entries, err := os.ReadDir(p.Root)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

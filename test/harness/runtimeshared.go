package harness

// The pieces both runtimes (and the kubelet) use: where a runtime keeps
// its state, how it is waited for and stopped, what it leaves mounted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/cri"
)

// LoopbackCNI is the CNI configuration both runtimes are given: the
// loopback plugin only (the tests' pods use the host's network or none).
const LoopbackCNI = `{"cniVersion": "0.4.0", "name": "hangwatch-loopback", "plugins": [{"type": "loopback"}]}`

// WaitCRIReady polls CRI Status on conn until both runtime and network
// are ready; it gives up when the runtime (watched) exits, with its log.
func WaitCRIReady(ctx context.Context, conn *cri.Conn, watched Watched, logTail func() string) error {
	var last error
	_, err := Poll(ctx, 60*time.Second, watched.String()+" ready", func() bool {
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		defer callCancel()
		resp, err := conn.Runtime.Status(callCtx, &runtimeapi.StatusRequest{})
		last = err
		if err == nil && !AllConditionsTrue(resp) {
			last = fmt.Errorf("runtime not ready: %v", resp.GetStatus().GetConditions())
		}
		return last == nil
	}, UnlessExited(watched), Explaining(func() string { return fmt.Sprintf("last: %v\n%s", last, logTail()) }))
	return err
}

// RuntimeDir is a new temp dir for a runtime's state and socket, made a
// shared mount (MakeSharedMount); its Stop unmounts and removes it.
func RuntimeDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := MakeSharedMount(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// StopPID sends SIGTERM, then SIGKILL if pid has not exited in grace.
func StopPID(pid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-exited
}

// UnmountUnder lazily unmounts every mount below dir, deepest first.
func UnmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			continue
		}
	}
}

// KillProcessesNaming kills, by PID, each process whose command line has
// both words, in case pod removal did not end it.
func KillProcessesNaming(command, word string) {
	for _, pid := range ProcessesNaming(command, word) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// SignalPID sends sig to what's process pid, refusing pid 0 and below.
func SignalPID(what string, pid int, sig syscall.Signal) error {
	if pid <= 0 { // never kill(0, ...): that is the test's own process group
		return fmt.Errorf("%s has no process to send %v", what, sig)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal %v to %s %d: %w", sig, what, pid, err)
	}
	return nil
}

// RuntimePaths are where a harness runtime keeps its state and socket,
// and the directory a node has its socket in (/run/containerd, /run/crio),
// which a pod mounts to reach it.
type RuntimePaths struct {
	Dir, Socket, Endpoint string
	NodeSocketDir         string
	// StateDir is containerd's state directory; empty for CRI-O.
	StateDir string
}

// AllConditionsTrue: the two conditions the kubelet requires are true
// (containerd 2.2+ adds ContainerdHasNoDeprecationWarnings, false on a
// cgroup v1 machine, which the kubelet ignores).
func AllConditionsTrue(resp *runtimeapi.StatusResponse) bool {
	ready := 0
	for _, cond := range resp.GetStatus().GetConditions() {
		if (cond.Type == runtimeapi.RuntimeReady || cond.Type == runtimeapi.NetworkReady) && cond.Status {
			ready++
		}
	}
	return ready == 2
}

// MakeSharedMount makes dir a shared mount of its own, as / is on a
// systemd node: the shipped pods mount the runtime's socket directory with
// HostToContainer propagation, which the runtime allows only from a shared
// or slave mount (this machine's / is private).
func MakeSharedMount(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mount %s on itself: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s a shared mount: %w", dir, err)
	}
	return nil
}

// ProcessesNaming are the PIDs of the processes whose command line has
// both words.
func ProcessesNaming(command, word string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), command) && strings.Contains(string(cmdline), word) {
			pids = append(pids, pid)
		}
	}
	return pids
}

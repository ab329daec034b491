package libsh

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script is a hack/*.sh script in small: run_scope, then what containerd
// leaves when the process that started it dies without its cleanup: a
// "shim" in a session of its own whose command line names the run's dir,
// its "pod" (a child that names nothing and has another TMPDIR), a process
// with the run's TMPDIR alone, a dir, and as root a tmpfs mounted under it.
// Then, by $MODE: run_child a "demo" that stops on SIGTERM, or write to
// stdout until that fails.
const script = `set -euo pipefail
source "$LIB"
run_scope libsh
echo "$RUN_TMP" > "$STATE/dir"
mkdir -p "$RUN_TMP/hwc-1/shm"
setsid bash -c 'TMPDIR=/nowhere sleep 300 & echo $! > "$0.pod"; wait' "$RUN_TMP/containerd.sock" </dev/null >/dev/null 2>&1 &
shim=$!
sleep 300 </dev/null >/dev/null 2>&1 &
plain=$!
until [ -s "$RUN_TMP/containerd.sock.pod" ]; do sleep 0.05; done
echo "$shim $(cat "$RUN_TMP/containerd.sock.pod") $plain" > "$STATE/pids"
if [ -n "${MOUNT:-}" ]; then mount -t tmpfs tmpfs "$RUN_TMP/hwc-1/shm"; fi
case "$MODE" in
wait) touch "$STATE/ready"; run_child bash -c 'trap "exit 0" TERM; while :; do sleep 0.1; done' ;;
write) touch "$STATE/ready"; while :; do echo "the demo's output"; sleep 0.05; done ;;
esac
`

// TestRunScopeCleansUpWhateverHappensToItsOutput: whatever ends a script
// that called run_scope (issue 40: ./hack/run.sh | tee demo.log stopped
// with Ctrl-C, which ends tee too), the processes of its run are gone
// afterwards, the mounts under its dir unmounted and the dir removed.
func TestRunScopeCleansUpWhateverHappensToItsOutput(t *testing.T) {
	// The scripts must start with these signals at their default: one
	// ignored when a shell starts (go test run under nohup ignores
	// SIGHUP) cannot be trapped. Handled here, they are default in a child.
	held := make(chan os.Signal, 1)
	signal.Notify(held, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	defer signal.Stop(held)
	for _, bin := range []string{"bash", "setsid", "ps", "awk", "grep", "find", "sleep"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s: %v", bin, err)
		}
	}
	for _, tc := range []struct {
		name string
		mode string
		// end ends the script: its PID and group are pgid, r is the read
		// end of its output's pipe, state the case's dir
		end      func(t *testing.T, pgid int, r *os.File, state string)
		closeOut bool // stdout and stderr closed from the start
		wantRC   int
	}{
		{"Ctrl-C twice with the pipe's reader gone", "wait", func(t *testing.T, pgid int, r *os.File, state string) {
			_ = r.Close() // tee, ended by the same Ctrl-C
			_ = syscall.Kill(-pgid, syscall.SIGINT)
			// a second Ctrl-C once the cleanup has begun
			waitFor(func() bool {
				return strings.Contains(readFile(t, filepath.Join(state, "libsh-cleanup.log")), "ending with")
			}, 10*time.Second)
			_ = syscall.Kill(-pgid, syscall.SIGINT)
		}, false, 130},
		{"the pipe's reader gone while it writes", "write", func(t *testing.T, pgid int, r *os.File, state string) {
			_ = r.Close()
		}, false, 141},
		{"SIGTERM to the script alone, output closed", "wait", func(t *testing.T, pgid int, r *os.File, state string) {
			_ = syscall.Kill(pgid, syscall.SIGTERM) // as timeout(1) does: the script's PID, not its group
		}, true, 143},
		{"SIGHUP to the group", "wait", func(t *testing.T, pgid int, r *os.File, state string) {
			_ = r.Close()
			_ = syscall.Kill(-pgid, syscall.SIGHUP)
		}, false, 129},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			lib, err := filepath.Abs("../lib.sh")
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-c", script}
			if tc.closeOut {
				args = []string{"-c", `exec bash -c "$0" >&- 2>&-`, script}
			}
			cmd := exec.Command("bash", args...)
			cmd.Env = append(os.Environ(), "LIB="+lib, "STATE="+state, "MODE="+tc.mode, "TMPDIR="+state, "HANGWATCH_CACHE="+state)
			if os.Geteuid() == 0 {
				cmd.Env = append(cmd.Env, "MOUNT=1")
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			cmd.Stdout, cmd.Stderr = w, w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = w.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { cleanupAfter(t, state) })
			if !waitFor(func() bool { _, err := os.Stat(filepath.Join(state, "ready")); return err == nil }, 20*time.Second) {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the script did not get ready: %v", <-done)
			}
			tc.end(t, cmd.Process.Pid, r, state)
			var werr error
			select {
			case werr = <-done:
			case <-time.After(time.Minute):
				ps, _ := exec.Command("ps", "-e", "-o", "pid,pgid,stat,wchan:32,args").CombinedOutput()
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the script (group %d) did not end a minute after %s; the processes:\n%s\nits cleanup's log:\n%s", cmd.Process.Pid,
					tc.name, ps, readFile(t, filepath.Join(state, "libsh-cleanup.log")))
			}
			if rc := cmd.ProcessState.ExitCode(); rc != tc.wantRC {
				t.Errorf("the script ended with %v (exit %d), want exit %d: end_run_scope's own exit", werr, rc, tc.wantRC)
			}
			for _, pid := range pidsOf(t, state) {
				if alive(pid) {
					t.Errorf("process %d (%s) outlived the script", pid, cmdline(pid))
				}
			}
			dir := strings.TrimSpace(readFile(t, filepath.Join(state, "dir")))
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the run's dir %s is still there (%v)", dir, err)
			}
			if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(dir)) {
				t.Errorf("a mount under %s is left", dir)
			}
			// the shim's bash at least; the demo's too when a second Ctrl-C
			// reaches the cleanup before the demo has ended
			if log := readFile(t, filepath.Join(state, "libsh-cleanup.log")); !strings.Contains(log, fmt.Sprintf("ending with %d", tc.wantRC)) || !killedLine.MatchString(log) {
				t.Errorf("the cleanup's log does not say how the script ended and what it killed:\n%s", log)
			}
		})
	}
}

// killedLine is the cleanup's log line that counts what it killed.
var killedLine = regexp.MustCompile(`killed what the run left: [0-9]+ bash, `)

// cleanupAfter kills and unmounts what a failed case left.
func cleanupAfter(t *testing.T, state string) {
	for _, pid := range pidsOf(t, state) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if dir := strings.TrimSpace(readFile(t, filepath.Join(state, "dir"))); dir != "" {
		_ = syscall.Unmount(filepath.Join(dir, "hwc-1/shm"), syscall.MNT_DETACH)
		_ = os.RemoveAll(dir)
	}
}

func pidsOf(t *testing.T, state string) []int {
	var pids []int
	for _, f := range strings.Fields(readFile(t, filepath.Join(state, "pids"))) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Error(err)
	}
	return string(b)
}

// alive: pid exists and is not a zombie (one that its new parent has not
// reaped yet is dead all the same).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func waitFor(cond func() bool, limit time.Duration) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}

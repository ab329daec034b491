package fence

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// writeTestFile writes path, creating its directories.
func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fakeCgroup makes a fake cgroup directory holding pids, with the given
// extra files (name -> content).
func fakeCgroup(t *testing.T, dir string, pids []int, files map[string]string) {
	t.Helper()
	var b strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&b, "%d\n", pid)
	}
	writeTestFile(t, filepath.Join(dir, "cgroup.procs"), b.String())
	for name, content := range files {
		writeTestFile(t, filepath.Join(dir, name), content)
	}
}

// fakeStat writes proc/<pid>/stat for a process in state.
func fakeStat(t *testing.T, proc string, pid int, comm string, state byte) {
	t.Helper()
	line := fmt.Sprintf("%d (%s) %c 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 100 1000 10\n", pid, comm, state, pid, pid)
	writeTestFile(t, filepath.Join(proc, strconv.Itoa(pid), "stat"), line)
}

// emptyProcs empties every cgroup.procs under dir, as the kernel does once
// the processes are dead.
func emptyProcs(t *testing.T, dir string) {
	t.Helper()
	err := walkCgroups(dir, func(d string) error {
		return os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
	})
	if err != nil {
		t.Error(err)
	}
}

// signals records the signals a Killer sends; onSignal, if set, runs on each.
type signals struct {
	mu       sync.Mutex
	pids     []int
	onSignal func(pid int) error
}

func (s *signals) send(pid int, sig unix.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig != unix.SIGKILL {
		return fmt.Errorf("unexpected signal %v", sig)
	}
	s.pids = append(s.pids, pid)
	if s.onSignal != nil {
		return s.onSignal(pid)
	}
	return nil
}

func (s *signals) sent() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.pids...)
}

// writes records the cgroup file writes a Killer makes, as "name=value".
type writes struct {
	t     *testing.T
	log   []string
	react func(path, value string)
}

func (w *writes) after(path string) {
	value := readTestFile(w.t, path)
	w.log = append(w.log, filepath.Base(path)+"="+value)
	if w.react != nil {
		w.react(path, value)
	}
}

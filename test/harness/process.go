package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a child the harness started, with its output in a log file.
type Process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// StartProcess starts bin with args, its output going to dir/<name>.log;
// it is killed if the test binary dies.
func StartProcess(dir, name, bin string, args ...string) (*Process, error) {
	return StartProcessEnv(dir, name, nil, bin, args...)
}

// StartProcessEnv is StartProcess with env added to the harness's own.
func StartProcessEnv(dir, name string, env []string, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &Process{name: name, log: logPath, exited: make(chan struct{}), cmd: exec.Command(bin, args...)}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); _ = log.Close(); close(p.exited) }()
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// String names the process in a wait's failure.
func (p *Process) String() string { return p.name }

// Alive tells whether the process has not exited.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop ends the process by PID: SIGTERM, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	if p != nil && p.cmd.Process != nil {
		StopPID(p.cmd.Process.Pid, p.exited, grace)
	}
}

// LogTail is the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return FileTail(p.name, p.log, n) }

// FileTail returns the last n lines of the log at path, headed by name,
// each cut to tailWidth characters (a sidecar at -v=5 logs whole objects).
func FileTail(name, path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > tailWidth {
			lines[i] = l[:tailWidth] + "…"
		}
	}
	return name + " log:\n" + strings.Join(lines, "\n")
}

const tailWidth = 600

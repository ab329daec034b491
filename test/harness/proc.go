package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The tests' one kind of child process: Proc, for what runs beside a test
// (`hangwatch run`, `hangwatch repair`, hangwatch-remedy,
// node-problem-detector), and Run, for a command run to its end
// (`hangwatch diag`, `hangwatch-remedy status`).

// A Proc is a child process a test started and watches: its output goes
// to LogPath, shown when the test fails, and it is stopped by PID when
// the test ends. It is a Watched: a wait given UnlessExited(p) ends when
// it dies.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	// Done is closed once it has exited, ExitErr set before.
	Done    chan struct{}
	ExitErr error
}

// ProcOptions change how StartProc starts and stops a process.
type ProcOptions struct {
	// Log is the file its output is appended to (shared with another
	// process); nil: a new file in the test's temp dir.
	Log *os.File
	// Grace is how long it has after SIGTERM when the test ends before
	// it is killed; 0 kills it at once.
	Grace time.Duration
	// DieWithTest kills it when the test binary dies (Pdeathsig).
	DieWithTest bool
	// Env, when set, is its environment.
	Env []string
	// LogShownElsewhere: another process writing to Log shows it when the
	// test fails.
	LogShownElsewhere bool
}

// StartProc starts bin with args as name.
func StartProc(t *testing.T, name string, o ProcOptions, bin string, args ...string) *Proc {
	t.Helper()
	log := o.Log
	if log == nil {
		var err error
		if log, err = os.Create(filepath.Join(t.TempDir(), filepath.Base(name)+".log")); err != nil {
			t.Fatal(err)
		}
		defer log.Close() // the child holds its own descriptor
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = o.Env
	if o.DieWithTest {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := WatchProc(name, cmd, log.Name())
	t.Cleanup(func() {
		if o.Grace > 0 {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.Done:
			case <-time.After(o.Grace):
			}
		}
		_ = cmd.Process.Kill()
		<-p.Done
		if t.Failed() && !o.LogShownElsewhere {
			data, _ := os.ReadFile(p.LogPath)
			t.Logf("%s log (pid %d):\n%s", name, p.PID(), data)
		}
	})
	return p
}

// WatchProc watches cmd, started by the caller (in a cgroup of its own,
// say), its output in logPath.
func WatchProc(name string, cmd *exec.Cmd, logPath string) *Proc {
	p := &Proc{Name: name, Cmd: cmd, LogPath: logPath, Done: make(chan struct{})}
	go func() { p.ExitErr = cmd.Wait(); close(p.Done) }()
	return p
}

// PID is its process ID.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Exited is closed once it has exited.
func (p *Proc) Exited() <-chan struct{} { return p.Done }

// String names it and, once it has exited, how it ended.
func (p *Proc) String() string {
	if p.Running() {
		return p.Name
	}
	return fmt.Sprintf("%s (%v)", p.Name, p.ExitErr)
}

// Running tells whether it has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.Done:
		return false
	default:
		return true
	}
}

// Terminate sends SIGTERM and waits (30 s at most) for it to exit.
func (p *Proc) Terminate(t *testing.T) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, p.Name+" to stop after SIGTERM", func() bool { return !p.Running() })
}

// Run runs bin with args to its end and returns what it wrote to stdout
// and stderr and its exit code; err when it could not run or was killed.
func Run(bin string, args ...string) (stdout, stderr string, code int, err error) {
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		code, err = exitErr.ExitCode(), nil
	}
	return out.String(), errOut.String(), code, err
}

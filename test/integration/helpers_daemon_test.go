package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// daemon is a `hangwatch run` process started by a test. It is a
// harness.Watched: a wait given harness.UnlessExited(d) ends when it dies.
type daemon struct {
	base    string
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error // set before done is closed
	logPath string
	log     *os.File
	// repair is `hangwatch repair` beside it (startRepairing); nil: none.
	repair *companion
}

// companion is a process started beside hangwatch and stopped with it.
type companion struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// watchDaemon makes the daemon of cmd, started, serving on addr: its
// exit closes Exited.
func watchDaemon(cmd *exec.Cmd, addr, logPath string) *daemon {
	d := &daemon{base: "http://" + addr, cmd: cmd, done: make(chan struct{}), logPath: logPath}
	go func() { d.exitErr = cmd.Wait(); close(d.done) }()
	return d
}

func startDaemon(t *testing.T, endpoint string, args ...string) *daemon {
	t.Helper()
	addr := harness.FreeAddr(t)
	// O_APPEND: `hangwatch repair` (startRepairing) writes to it too
	log, err := os.OpenFile(filepath.Join(t.TempDir(), "hangwatch.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"run", "-r", endpoint, "--listen-address", addr}, args...)
	if !slices.Contains(args, "--repair-state-file") { // never the node's own /var/lib/hangwatch
		all = append(all, "--repair-state-file", filepath.Join(t.TempDir(), "repair-budget.json"))
	}
	cmd := exec.Command(hangwatchBin, all...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := watchDaemon(cmd, addr, log.Name())
	d.log = log
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("hangwatch log:\n%s", data)
		}
	})
	harness.Eventually(t, 30*time.Second, "/healthz to answer", func() bool {
		_, err := d.get("/healthz")
		return err == nil
	}, harness.UnlessExited(d))
	return d
}

// Exited is closed once hangwatch has exited.
func (d *daemon) Exited() <-chan struct{} { return d.done }

// String names hangwatch and, once it has exited, how it ended.
func (d *daemon) String() string {
	select {
	case <-d.done:
		return fmt.Sprintf("hangwatch (%v)", d.exitErr)
	default:
		return "hangwatch"
	}
}

// running tells whether hangwatch has not exited.
func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for a clean exit, of the repair process
// beside it first.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.repair != nil {
		d.repair.stop(t)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "hangwatch to stop after SIGTERM", func() bool { return !d.running() })
	if d.exitErr != nil {
		t.Errorf("hangwatch exited with %v after SIGTERM, want 0", d.exitErr)
	}
}

func (d *daemon) get(path string) (string, error) {
	resp, err := http.Get(d.base + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return string(body), err
}

// condition reads condType from hangwatch's /conditions; all empty when
// it is not there or /conditions does not answer.
func (d *daemon) condition(t *testing.T, condType string) (status, reason, message string) {
	t.Helper()
	body, err := d.get("/conditions")
	if err != nil {
		return "", "", ""
	}
	var out struct {
		Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("/conditions is not JSON: %v: %s", err, body)
	}
	for _, c := range out.Conditions {
		if c.Type == condType {
			return c.Status, c.Reason, c.Message
		}
	}
	return "", "", ""
}

// runtimeHung is the status of RuntimeHung in /conditions.
func (d *daemon) runtimeHung(t *testing.T) string {
	t.Helper()
	status, _, _ := d.condition(t, "RuntimeHung")
	return status
}

// metricValue reads one sample from /metrics text, -1 when absent.
func metricValue(text, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// startRepairing starts hangwatch serving the repair link and, beside it,
// `hangwatch repair` on the same flags: the privileged half of repair in
// a process of its own, as the repair overlay runs it. Both write to
// hangwatch's log. It returns once the repair process has read the
// agent's view.
func startRepairing(t *testing.T, endpoint string, args ...string) *daemon {
	t.Helper()
	if !slices.Contains(args, "--repair-state-file") { // never the node's own /var/lib/hangwatch
		args = append(args, "--repair-state-file", filepath.Join(t.TempDir(), "repair-budget.json"))
	}
	args = append(args, "--repair-socket", filepath.Join(socketDir(t), "repair.sock"))
	d := startDaemon(t, endpoint, args...)
	cmd := exec.Command(hangwatchBin, append([]string{"repair", "-r", endpoint}, args...)...)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &companion{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	d.repair = c
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.done })
	harness.Eventually(t, 30*time.Second, "hangwatch repair to read the agent's view", func() bool {
		text, err := d.get("/metrics")
		return err == nil && strings.Contains(text, "hangwatch_repair_linked 1")
	}, harness.UnlessExited(d), harness.UnlessExited(c))
	listensOnNothing(t, cmd.Process.Pid)
	return d
}

// listensOnNothing checks that no socket pid holds listens: no TCP port
// and no Unix socket (the repair process only dials the agent).
func listensOnNothing(t *testing.T, pid int) {
	t.Helper()
	held := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(target, "socket:[") {
			held[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	for _, table := range []struct {
		path               string
		stateCol, inodeCol int
		listening          string
	}{{"/proc/net/tcp", 3, 9, "0A"}, {"/proc/net/tcp6", 3, 9, "0A"}, {"/proc/net/unix", 3, 6, "00010000"}} {
		raw, err := os.ReadFile(table.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > table.inodeCol && f[table.stateCol] == table.listening && held[f[table.inodeCol]] {
				t.Errorf("hangwatch repair (PID %d) listens: %s", pid, line)
			}
		}
	}
}

// Exited is closed once the process has exited.
func (c *companion) Exited() <-chan struct{} { return c.done }

func (c *companion) String() string { return "hangwatch repair" }

// stop sends SIGTERM and waits for it to exit.
func (c *companion) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "hangwatch repair to stop after SIGTERM", func() bool {
		select {
		case <-c.done:
			return true
		default:
			return false
		}
	})
}

package hangwatch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
)

// Daemon is a `hangwatch run` process started by a test (a Proc) and
// where it serves.
type Daemon struct {
	*harness.Proc
	Base string
	// Log is its log file, which `hangwatch repair` beside it writes too.
	Log *os.File
	// Repair is `hangwatch repair` beside it (StartRepairing); nil: none.
	Repair *harness.Proc
	// Secure is its --secure-listen-address and MetricsToken a token that
	// may read /metrics there: set, Metrics reads it there (the plain port
	// serves no /metrics then).
	Secure, MetricsToken string
}

// StartDaemon starts `hangwatch run` on the runtime endpoint with args and
// waits for its /healthz.
func StartDaemon(t *testing.T, endpoint string, args ...string) *Daemon {
	t.Helper()
	addr := harness.FreeAddr(t)
	// O_APPEND: `hangwatch repair` (StartRepairing) writes to it too
	log, err := os.OpenFile(filepath.Join(t.TempDir(), "hangwatch.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	all := append([]string{"run", "-r", endpoint, "--listen-address", addr}, args...)
	if !slices.Contains(args, "--repair-state-file") { // never the node's own /var/lib/hangwatch
		all = append(all, "--repair-state-file", filepath.Join(t.TempDir(), "repair-budget.json"))
	}
	d := &Daemon{Proc: harness.StartProc(t, "hangwatch", harness.ProcOptions{Log: log}, HangwatchBin, all...), Base: "http://" + addr, Log: log}
	harness.Eventually(t, 30*time.Second, "/healthz to answer", func() bool {
		_, err := d.Get("/healthz")
		return err == nil
	}, harness.UnlessExited(d))
	return d
}

// Stop sends SIGTERM and waits for a clean exit, of the repair process
// beside it first.
func (d *Daemon) Stop(t *testing.T) {
	t.Helper()
	if d.Repair != nil {
		d.Repair.Terminate(t)
	}
	d.Terminate(t)
	if d.ExitErr != nil {
		t.Errorf("hangwatch exited with %v after SIGTERM, want 0", d.ExitErr)
	}
}

// Get asks hangwatch's path; an error unless it answers 200.
func (d *Daemon) Get(path string) (string, error) {
	code, body, err := harness.Get(d.Base + path)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: %d: %s", path, code, body)
	}
	return body, err
}

// Condition reads condType from hangwatch's /conditions; all empty when
// it is not there or /conditions does not answer.
func (d *Daemon) Condition(t *testing.T, condType string) (status, reason, message string) {
	t.Helper()
	body, err := d.Get("/conditions")
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

// RuntimeHung is the status of RuntimeHung in /conditions.
func (d *Daemon) RuntimeHung(t *testing.T) string {
	t.Helper()
	status, _, _ := d.Condition(t, "RuntimeHung")
	return status
}

// StartRepairing starts hangwatch serving the repair link and, beside it,
// `hangwatch repair` on the same flags: the privileged half of repair in
// a process of its own, as the repair overlay runs it. Both write to
// hangwatch's log. It returns once the repair process has read the
// agent's view.
func StartRepairing(t *testing.T, endpoint string, args ...string) *Daemon {
	t.Helper()
	args = RepairArgs(t, args...)
	d := StartDaemon(t, endpoint, args...)
	LinkRepair(t, d, endpoint, args...)
	return d
}

// RepairArgs adds to args what hangwatch and `hangwatch repair` beside it
// need in a test: a repair socket, and a state file unless args name one.
func RepairArgs(t *testing.T, args ...string) []string {
	t.Helper()
	if !slices.Contains(args, "--repair-state-file") { // never the node's own /var/lib/hangwatch
		args = append(args, "--repair-state-file", filepath.Join(t.TempDir(), "repair-budget.json"))
	}
	return append(args, "--repair-socket", filepath.Join(SocketDir(t), "repair.sock"))
}

// LinkRepair starts `hangwatch repair` beside d on the flags d was
// started with (RepairArgs) and waits until it has read d's view.
func LinkRepair(t *testing.T, d *Daemon, endpoint string, args ...string) {
	t.Helper()
	c := harness.StartProc(t, "hangwatch repair", harness.ProcOptions{Log: d.Log, LogShownElsewhere: true}, HangwatchBin, append([]string{"repair", "-r", endpoint}, args...)...)
	d.Repair = c
	harness.Eventually(t, 30*time.Second, "hangwatch repair to read the agent's view", func() bool {
		text, err := d.Metrics()
		return err == nil && strings.Contains(text, "hangwatch_repair_linked 1")
	}, harness.UnlessExited(d), harness.UnlessExited(c))
	ListensOnNothing(t, c.PID())
}

// Metrics reads hangwatch's /metrics: on its secure port when d.Secure is
// set, else on the plain one.
func (d *Daemon) Metrics() (string, error) {
	if d.Secure == "" {
		return d.Get("/metrics")
	}
	code, body, err := harness.Get("https://"+d.Secure+"/metrics", harness.Token(d.MetricsToken), harness.Client(harness.SecureClient))
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET /metrics on the secure port: %d: %s", code, body)
	}
	return body, err
}

// ListensOnNothing checks that no socket pid holds listens: no TCP port
// and no Unix socket (the repair process only dials the agent).
func ListensOnNothing(t *testing.T, pid int) {
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

func (d *Daemon) ReloadCond(t *testing.T, condType string) ReloadCondition {
	t.Helper()
	body, err := d.Get("/conditions")
	if err != nil {
		return ReloadCondition{}
	}
	var out struct{ Conditions []ReloadCondition }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("/conditions is not JSON: %v: %s", err, body)
	}
	for _, c := range out.Conditions {
		if c.Type == condType {
			return c
		}
	}
	return ReloadCondition{}
}

// StillFalse fails if condType leaves False within d (a read after the
// skip counter moved: a match would have raised it by then).
func (d *Daemon) StillFalse(t *testing.T, condType string, within time.Duration) {
	t.Helper()
	var reason, msg string
	harness.Throughout(t, within, condType+" False", func() bool {
		var st string
		st, reason, msg = d.Condition(t, condType)
		return st == "False"
	}, harness.Every(100*time.Millisecond), harness.UnlessExited(d),
		harness.Explaining(func() string { return reason + ": " + msg }))
}

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// daemon is a `hangwatch run` process started by a test.
type daemon struct {
	base    string
	cmd     *exec.Cmd
	exited  chan error
	logPath string
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startDaemon(t *testing.T, endpoint string, args ...string) *daemon {
	t.Helper()
	addr := freePort(t)
	log, err := os.Create(filepath.Join(t.TempDir(), "hangwatch.log"))
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"run", "-r", endpoint, "--listen-address", addr}, args...)
	d := &daemon{base: "http://" + addr, cmd: exec.Command(hangwatchBin, all...), exited: make(chan error, 1), logPath: log.Name()}
	d.cmd.Stdout, d.cmd.Stderr = log, log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("hangwatch log:\n%s", data)
		}
	})
	d.waitFor(t, 30*time.Second, "/healthz to answer", func() bool {
		_, err := d.get("/healthz")
		return err == nil
	})
	return d
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

// waitFor polls cond until it holds, failing the test after limit.
func (d *daemon) waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case err := <-d.exited:
			d.exited <- err // for the cleanup, which waits on it too
			t.Fatalf("hangwatch exited (%v) while waiting for %s", err, what)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, what)
		}
	}
}

func (d *daemon) runtimeHung(t *testing.T) string {
	t.Helper()
	body, err := d.get("/conditions")
	if err != nil {
		return ""
	}
	var out struct {
		Conditions []struct{ Type, Status, Reason string } `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("/conditions is not JSON: %v: %s", err, body)
	}
	for _, c := range out.Conditions {
		if c.Type == "RuntimeHung" {
			return c.Status
		}
	}
	return ""
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

func TestRunRaisesAndClearsRuntimeHung(t *testing.T) {
	c := sharedContainerd(t)
	const period, timeout = time.Second, time.Second
	d := startDaemon(t, c.Endpoint, "--period", period.String(), "--max-period", "2s", "-t", timeout.String())
	d.waitFor(t, 30*time.Second, "RuntimeHung False", func() bool { return d.runtimeHung(t) == "False" })

	thaw := freeze(t, c)
	frozeAt := time.Now()
	d.waitFor(t, period+timeout+generousSlack+10*time.Second, "RuntimeHung True", func() bool { return d.runtimeHung(t) == "True" })
	raised := time.Since(frozeAt)
	measure(t, "run_runtimehung_raised_after_freeze", raised)
	if raised > period+timeout+generousSlack {
		t.Errorf("RuntimeHung took %v, want within period+timeout (%v) plus slack", raised, period+timeout)
	}
	text, err := d.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v := metricValue(text, `hangwatch_cri_call_in_flight_seconds{method="ListPodSandbox"}`); v < timeout.Seconds() {
		t.Errorf("ListPodSandbox in-flight age = %v, want at least %v while frozen", v, timeout.Seconds())
	}
	if v := metricValue(text, `hangwatch_cri_probes_total{method="Version",result="timeout"}`); v < 1 {
		t.Errorf("Version timeouts = %v, want at least 1", v)
	}

	thaw()
	thawedAt := time.Now()
	d.waitFor(t, 60*time.Second, "RuntimeHung False after thaw", func() bool { return d.runtimeHung(t) == "False" })
	measure(t, "run_runtimehung_cleared_after_thaw", time.Since(thawedAt))
	// A probe of the next cycle may be in flight at a scrape, for a few
	// milliseconds; the frozen call's age must be gone, so read until 0.
	d.waitFor(t, 10*time.Second, "ListPodSandbox in-flight age 0 after thaw", func() bool {
		text, err := d.get("/metrics")
		return err == nil && metricValue(text, `hangwatch_cri_call_in_flight_seconds{method="ListPodSandbox"}`) == 0
	})

	d.stop(t)
}

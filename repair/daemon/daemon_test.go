package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/nodelink"
	"github.com/hangwatch/hangwatch/repair"
)

// fakeAgent serves the link on a Unix socket: a view in which the runtime
// is hung and has given no answer for 5 minutes, and it keeps the Events
// the repair process hands it.
type fakeAgent struct {
	mu     sync.Mutex
	views  int
	events []nodelink.EventNote
}

func (a *fakeAgent) serve(t *testing.T, socket string) {
	t.Helper()
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(nodelink.ViewPath, func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		a.views++
		a.mu.Unlock()
		_ = json.NewEncoder(w).Encode(nodelink.View{
			Conditions: []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "RuntimeNotResponding"}},
			Silences:   map[repair.Target]nodelink.SilenceNote{repair.TargetRuntime: {What: "Version", For: 5 * time.Minute}}})
	})
	mux.HandleFunc(nodelink.EventPath, func(w http.ResponseWriter, r *http.Request) {
		var e nodelink.EventNote
		_ = json.NewDecoder(r.Body).Decode(&e)
		a.mu.Lock()
		a.events = append(a.events, e)
		a.mu.Unlock()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func (a *fakeAgent) counts() (views, events int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.views, len(a.events)
}

// configFile writes the repair settings the test runs with.
func configFile(t *testing.T, dir, socket string, enabled bool) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`apiVersion: hangwatch.io/v1alpha1
kind: HangwatchConfiguration
runtime:
  endpoint: unix://%[1]s/cri.sock
repair:
  enabled: %[3]t
  dryRun: true
  agentSocket: %[2]s
  stateFile: %[1]s/budget
  systemdSocket: %[1]s/systemd-private
  restartRuntimeAfter: 30s
`, dir, socket, enabled)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTheRepairProcessReadsTheViewAndReloads: assembled from a config file
// on a fake clock, the repair process reads the agent's view on its link;
// repair off, it acts on nothing; the file changed to turn repair on (dry
// run), it judges the runtime's 5 minutes of silence and tells the agent
// an Event (RepairRefused: no systemd here), restarting nothing.
func TestTheRepairProcessReadsTheViewAndReloads(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "agent.sock")
	agent := &fakeAgent{}
	agent.serve(t, socket)
	path := configFile(t, dir, socket, false)
	fs := pflag.NewFlagSet("repair", pflag.ContinueOnError)
	config.AddFlags(fs, config.Default())
	loader := &config.Loader{Path: path, Named: "--config", Flags: fs}
	loaded, err := loader.Load()
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: loaded, Reload: &Reload{Path: path, Load: loader.LoadBytes}, Clock: clk})
	}()
	defer func() { cancel(); <-done }()
	tickUntil(t, clk, agent, 3, func() bool { v, _ := agent.counts(); return v >= 3 })
	if _, events := agent.counts(); events != 0 {
		t.Fatalf("repair off told %d Events: %+v", events, agent.events)
	}
	configFile(t, dir, socket, true)
	tickUntil(t, clk, agent, 120, func() bool { _, e := agent.counts(); return e > 0 })
	agent.mu.Lock()
	defer agent.mu.Unlock()
	e := agent.events[0]
	t.Logf("Events: %+v", agent.events)
	if (e.Reason != "RepairRefused" && e.Reason != "RepairDryRun") || !strings.Contains(e.Message, "Version unanswered for 5m0s") {
		t.Errorf("the first Event %+v; want RepairRefused (no systemd here) or RepairDryRun, naming the silence", e)
	}
}

// tickUntil steps clk a second at a time, each time waiting (in real time,
// clocktest.Within at most) until the repair process has read the view of
// that tick, until done holds; it fails t after ticks of them. A fake
// clock's ticker counts as a waiter even while its goroutine is busy, so
// the view read, not the clock's waiters, says a tick was taken.
func tickUntil(t *testing.T, clk *testclock.FakeClock, agent *fakeAgent, ticks int, done func() bool) {
	t.Helper()
	clocktest.Await(t, "the first view read", func() bool { v, _ := agent.counts(); return v >= 1 })
	for i := 0; !done(); i++ {
		if i == ticks {
			t.Fatalf("not done after %d ticks", ticks)
		}
		before, _ := agent.counts()
		clk.Step(time.Second)
		clocktest.Await(t, "the view read at the tick", func() bool { v, _ := agent.counts(); return v > before })
	}
}

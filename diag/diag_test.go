package diag

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/pleg"
	"github.com/hangwatch/hangwatch/repair"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt from what diag prints now")

// node is a fake node: a CRI runtime, the kubelet's /metrics, an API
// server with the node's Lease renewed 3 s ago, a kernel log that cannot
// be read and no systemd, on a fake clock.
type node struct {
	runtime *fakeRuntime
	clk     *clocktesting.FakeClock
	opts    Options
}

func newNode(t *testing.T) *node {
	t.Helper()
	n := &node{runtime: &fakeRuntime{}, clk: clocktesting.NewFakeClock(time.Unix(1795300600, 0))}
	cfg := config.Default()
	cfg.Runtime.Endpoint = serveRuntime(t, n.runtime)
	cfg.Runtime.Timeout = &metav1.Duration{Duration: 2 * time.Second}
	cfg.Kernel.KmsgPath = "/nonexistent/kmsg"
	cfg.APIServer.NodeName, cfg.APIServer.Kubeconfig = "node-a", serveAPIServer(t, n.clk.Now().Add(-3*time.Second))
	cfg.APIServer.NodeMonitorGracePeriod = metav1.Duration{Duration: 50 * time.Second}
	cfg.Kubelet.MetricsURL = serveKubelet(t, n.clk.Now())
	cfg.Repair.Enabled = true
	n.opts = Options{Config: cfg, Samples: 1, Clock: n.clk,
		Dial: func(context.Context, string) (repair.Manager, error) {
			return nil, errors.New("no systemd in this test")
		}}
	return n
}

// golden compares what diag printed, its endpoint's temp path taken out,
// with testdata/name.
func golden(t *testing.T, n *node, name string, got []byte) {
	t.Helper()
	got = bytes.ReplaceAll(got, []byte(n.opts.Config.Runtime.Endpoint), []byte("unix:///run/fake/cri.sock"))
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("diag printed (go test ./diag -update rewrites %s):\n%s\nwant:\n%s", path, got, want)
	}
}

// TestHealthyNodeTable: every section of the table on a healthy node, as
// the command prints it.
func TestHealthyNodeTable(t *testing.T) {
	n := newNode(t)
	r, err := Run(context.Background(), n.opts)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Healthy() || r.Sandboxes != 2 || r.Containers != 2 || r.PLEG.Verdict != pleg.VerdictHealthy {
		t.Fatalf("report %+v, PLEG %+v: want Healthy with 2 sandboxes and 2 containers", r.CRIReport, r.PLEG)
	}
	var out bytes.Buffer
	if err := Write(&out, "table", r); err != nil {
		t.Fatal(err)
	}
	golden(t, n, "healthy.txt", out.Bytes())
}

// TestJSONKeys: -o json carries each section under its documented key,
// the CRI report's keys at the top.
func TestJSONKeys(t *testing.T) {
	n := newNode(t)
	r, err := Run(context.Background(), n.opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, "json", r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verdict", "reasons", "endpoint", "endpointSource", "calls", "inFlight", "kernel", "lease", "pleg", "repair"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("-o json lacks %q:\n%s", k, out.String())
		}
	}
	out.Reset()
	if err := Write(&out, "yaml", r); err != nil || !strings.Contains(out.String(), "verdict: Healthy") {
		t.Errorf("-o yaml: %v\n%s", err, out.String())
	}
}

// TestFrozenRuntimeIsHung: a runtime that answers nothing is Hung after
// the timeout of the fake clock, its calls in flight, and the emulated
// relist stalled.
func TestFrozenRuntimeIsHung(t *testing.T) {
	n := newNode(t)
	n.runtime.frozen.Store(true)
	n.opts.Config.Runtime.Timeout = &metav1.Duration{Duration: 100 * time.Millisecond} // the emulation's own wait, in real time
	n.opts.Config.Kernel.Enabled, n.opts.Config.Repair.Enabled, n.opts.Config.APIServer.Kubeconfig = false, false, ""
	done := make(chan struct{})
	var r *Report
	var err error
	go func() {
		defer close(done)
		r, err = Run(context.Background(), n.opts)
	}()
	stepUntilDone(t, n.clk, 100*time.Millisecond, done)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictHung || r.Healthy() || len(r.InFlight) == 0 || r.Kernel != nil || r.Lease != nil || r.Repair != nil {
		t.Fatalf("report %+v: want Hung with calls in flight and no kernel, lease or repair section", r)
	}
	var out bytes.Buffer
	if err := Write(&out, "table", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VERDICT  Hung", "Version did not answer within 100ms (1 of 1 calls)", "IN FLIGHT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestUnreadableCrictlConfigIsAnError: an endpoint that cannot be chosen
// is the run's error, not a report.
func TestUnreadableCrictlConfigIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crictl.yaml")
	if err := os.WriteFile(path, []byte("timeout: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Runtime.CrictlConfig = path
	if _, err := Run(context.Background(), Options{Config: cfg, Samples: 1}); err == nil || !strings.Contains(err.Error(), "timeout -1: must not be negative") {
		t.Fatalf("err = %v, want the crictl config's", err)
	}
}

// stepUntilDone steps clk by step whenever something waits on it, until
// done is closed; it fails t after clocktest.Within of real time.
func stepUntilDone(t *testing.T, clk *clocktesting.FakeClock, step time.Duration, done <-chan struct{}) {
	t.Helper()
	clocktest.Await(t, "diag to finish", func() bool {
		select {
		case <-done:
			return true
		default:
		}
		if clk.HasWaiters() {
			clk.Step(step)
		}
		return false
	})
}

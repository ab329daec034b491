package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// HangTrial is one hold of a CRI call through the fault proxy, after a
// spell of slowness of the same call or from a healthy start.
type HangTrial struct {
	Name     string
	Method   string // held, and slowed before
	Object   bool   // one container's calls only (ContainerStatus of it)
	SlowFor  time.Duration
	Reason   string // RuntimeHung's reason once the hold is seen
	DaemonAt []string
	// ends: the slowness ends instead of turning into a hold; measured is
	// how long the next full cycle then takes to come.
	Ends bool
}

// HangSeen is when RuntimeHung rose after a hold: from the hold's start,
// and from the first held call's arrival at the proxy.
type HangSeen struct{ FromHold, FromCallOut time.Duration }

// RunHangTrial starts hangwatch through a fresh proxy, slows the call for
// slowFor, holds it, and measures when RuntimeHung rises with the call's
// reason.
func RunHangTrial(t *testing.T, tr HangTrial) HangSeen {
	t.Helper()
	c := hangwatch.OwnContainerd(t)
	dir, err := os.MkdirTemp("", "hwsl")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	proxy, err := criproxy.Start(filepath.Join(dir, "cri.sock"), c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Stop()
	d := hangwatch.StartDaemon(t, proxy.Endpoint, append([]string{"--kernel=false", "--pleg-emulation-period", "0"}, tr.DaemonAt...)...)
	defer func() { _ = d.Cmd.Process.Kill(); <-d.Done }() // the next trial starts afresh
	runtimeHung := func() (string, string) { st, reason, _ := d.Condition(t, "RuntimeHung"); return st, reason }
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { st, _ := runtimeHung(); return st == "False" }, harness.UnlessExited(d))
	fault := criproxy.Fault{Method: tr.Method}
	if tr.Object {
		fault.ID = FirstContainer(t, c)
	}
	if tr.SlowFor > 0 {
		slow := fault
		slow.Delay = 1500 * time.Millisecond
		release := proxy.Inject(slow)
		SlowIsNotHung(t, tr.SlowFor, "slow "+tr.Method, runtimeHung, d)
		defer release()
		if tr.Ends {
			return MeasureCadenceBack(t, tr, d, release)
		}
		held := proxy.Inject(fault)
		defer held()
		release()
	} else {
		defer proxy.Inject(fault)()
	}
	return MeasureHold(t, tr, proxy, d, runtimeHung)
}

// MeasureHold waits for RuntimeHung with the trial's reason and records
// how long it took from the hold and from the first held call.
func MeasureHold(t *testing.T, tr HangTrial, proxy *criproxy.Proxy, d *hangwatch.Daemon, runtimeHung func() (string, string)) HangSeen {
	t.Helper()
	held := time.Now()
	heldBefore := proxy.Held(tr.Method)
	var callOut time.Time
	harness.Eventually(t, 3*time.Minute, "RuntimeHung True with "+tr.Reason, func() bool {
		if callOut.IsZero() && proxy.Held(tr.Method) > heldBefore {
			callOut = time.Now()
		}
		st, reason := runtimeHung()
		return st == "True" && reason == tr.Reason
	}, harness.UnlessExited(d))
	seen := HangSeen{FromHold: time.Since(held)}
	if !callOut.IsZero() {
		seen.FromCallOut = time.Since(callOut)
	}
	harness.Measure(t, "runtime_hung_"+tr.Name+"_from_hold", seen.FromHold)
	harness.Measure(t, "runtime_hung_"+tr.Name+"_from_call_out", seen.FromCallOut)
	return seen
}

// MeasureCadenceBack ends the slowness and records how long the next full
// cycle takes to come: within a period (30 s) once a beat answers on time.
func MeasureCadenceBack(t *testing.T, tr HangTrial, d *hangwatch.Daemon, endSlowness func()) HangSeen {
	t.Helper()
	cycles := func() float64 {
		text, err := d.Get("/metrics")
		if err != nil {
			return -1
		}
		return harness.MetricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="ok"}`) +
			max(harness.MetricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="slow"}`), 0)
	}
	before := cycles()
	endSlowness()
	ended := time.Now()
	harness.Eventually(t, 2*time.Minute, "a full cycle after the slowness ended", func() bool { return cycles() > before }, harness.UnlessExited(d))
	seen := HangSeen{FromHold: time.Since(ended)}
	harness.Measure(t, "cri_cycle_after_"+tr.Name, seen.FromHold)
	return seen
}

// FirstContainer is a container of the shared containerd's.
func FirstContainer(t *testing.T, c *containerd.Containerd) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Runtime().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(resp.Containers) == 0 {
		t.Fatalf("the shared containerd's containers: %v (%d)", err, len(resp.GetContainers()))
	}
	return resp.Containers[0].Id
}

// SlowIsNotHung watches RuntimeHung (runtimeHung's status and reason) for
// span of slow calls (what names them), then waits for it to be False. A
// judgement that took slow calls for hung would hold it from the first slow
// heartbeat on; it fails the test past half of span. A call that a
// saturated machine keeps past the timeout is hung by the rule (test runs
// on 2 cores made 1.2 s and 1.5 s calls take more than 2 s), and holds
// RuntimeHung only until two heartbeats answer in time: the test logs the
// load's share rather than failing on one such call.
func SlowIsNotHung(t *testing.T, span time.Duration, what string, runtimeHung func() (string, string), d harness.Watched) {
	t.Helper()
	var hungFor time.Duration
	last := time.Now()
	until := last.Add(span)
	harness.Eventually(t, 2*span, what+" for "+span.String(), func() bool {
		now := time.Now()
		if st, reason := runtimeHung(); st != "False" {
			hungFor += now.Sub(last)
			if hungFor > span/2 {
				t.Fatalf("%s held RuntimeHung (%s) for %v of %v; slow is not hung", what, reason, hungFor.Round(time.Millisecond), span)
			}
		}
		last = now
		return now.After(until)
	}, harness.UnlessExited(d))
	if hungFor > 0 {
		t.Logf("RuntimeHung True for %v of %v of %s: calls the machine's load kept past the timeout", hungFor.Round(time.Millisecond), span, what)
	}
	harness.Eventually(t, 30*time.Second, "RuntimeHung False after "+what, func() bool { st, _ := runtimeHung(); return st == "False" }, harness.UnlessExited(d))
}

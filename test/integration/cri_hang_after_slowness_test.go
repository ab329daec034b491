package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/hangwatch/hangwatch/test/criproxy"
	"github.com/hangwatch/hangwatch/test/harness"
)

// hangTrial is one hold of a CRI call through the fault proxy, after a
// spell of slowness of the same call or from a healthy start.
type hangTrial struct {
	name     string
	method   string // held, and slowed before
	object   bool   // one container's calls only (ContainerStatus of it)
	slowFor  time.Duration
	reason   string // RuntimeHung's reason once the hold is seen
	daemonAt []string
	// ends: the slowness ends instead of turning into a hold; measured is
	// how long the next full cycle then takes to come.
	ends bool
}

// hangSeen is when RuntimeHung rose after a hold: from the hold's start,
// and from the first held call's arrival at the proxy.
type hangSeen struct{ fromHold, fromCallOut time.Duration }

// TestAListHangAfterSlownessIsSeenAsFastAsFromHealthy runs hangwatch with
// its defaults through the fault proxy to a real containerd. 40 s of
// ListPodSandbox answering in 1.5 s (slow, not hung) back the full cycles
// off; then ListPodSandbox is held while Version answers. The heartbeat's
// list beat, which never backs off, must see it within two heartbeat
// periods and a timeout (7 s), as from a healthy start; the bound here is
// 15 s on shared machines. hack/bench.sh measures it and the per-object
// case three times each (TestHangAfterSlownessMeasured).
func TestAListHangAfterSlownessIsSeenAsFastAsFromHealthy(t *testing.T) {
	harness.Parallel(t)
	seen := runHangTrial(t, hangTrial{name: "list_after_slowness", method: "ListPodSandbox", slowFor: 40 * time.Second,
		reason: "ListPodSandboxHung"})
	if seen.fromHold > 15*time.Second {
		t.Errorf("a ListPodSandbox hold after slowness was seen %v after it began; goal 7s (bound 15s on shared machines)", seen.fromHold)
	}
}

// TestHangAfterSlownessMeasured records, three times each, how long a
// held ListPodSandbox and a held ContainerStatus (one container's) take to
// raise RuntimeHung after a minute of the same call answering in 1.5 s,
// and from a healthy start, for BENCHMARKS.md.
func TestHangAfterSlownessMeasured(t *testing.T) {
	harness.Parallel(t)
	harness.RequireSuite(t, harness.SuiteBench, "three holds of each kind after a minute of slowness, about 17 minutes")
	perObject := []string{"--sample-size", "10"} // every container each cycle: the held one is read
	trials := []hangTrial{
		{name: "list_after_slowness", method: "ListPodSandbox", slowFor: time.Minute, reason: "ListPodSandboxHung"},
		{name: "list_from_healthy", method: "ListPodSandbox", reason: "ListPodSandboxHung"},
		{name: "container_status_after_slowness", method: "ContainerStatus", object: true, slowFor: time.Minute,
			reason: "ContainerStatusHung", daemonAt: perObject},
		{name: "container_status_from_healthy", method: "ContainerStatus", object: true, reason: "ContainerStatusHung", daemonAt: perObject},
	}
	for _, tr := range trials {
		for range 3 {
			runHangTrial(t, tr)
		}
	}
	for range 3 {
		runHangTrial(t, hangTrial{name: "list_slowness_ended", method: "ListPodSandbox", slowFor: time.Minute, ends: true})
	}
}

// runHangTrial starts hangwatch through a fresh proxy, slows the call for
// slowFor, holds it, and measures when RuntimeHung rises with the call's
// reason.
func runHangTrial(t *testing.T, tr hangTrial) hangSeen {
	t.Helper()
	c := ownContainerd(t)
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
	d := startDaemon(t, proxy.Endpoint, append([]string{"--kernel=false", "--pleg-emulation-period", "0"}, tr.daemonAt...)...)
	defer func() { _ = d.cmd.Process.Kill(); <-d.done }() // the next trial starts afresh
	runtimeHung := func() (string, string) { st, reason, _ := d.condition(t, "RuntimeHung"); return st, reason }
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { st, _ := runtimeHung(); return st == "False" }, harness.UnlessExited(d))
	fault := criproxy.Fault{Method: tr.method}
	if tr.object {
		fault.ID = firstContainer(t, c)
	}
	if tr.slowFor > 0 {
		slow := fault
		slow.Delay = 1500 * time.Millisecond
		release := proxy.Inject(slow)
		harness.Throughout(t, tr.slowFor, "slow "+tr.method+" is not hung", func() bool { st, _ := runtimeHung(); return st == "False" }, harness.UnlessExited(d))
		defer release()
		if tr.ends {
			return measureCadenceBack(t, tr, d, release)
		}
		held := proxy.Inject(fault)
		defer held()
		release()
	} else {
		defer proxy.Inject(fault)()
	}
	return measureHold(t, tr, proxy, d, runtimeHung)
}

// measureHold waits for RuntimeHung with the trial's reason and records
// how long it took from the hold and from the first held call.
func measureHold(t *testing.T, tr hangTrial, proxy *criproxy.Proxy, d *daemon, runtimeHung func() (string, string)) hangSeen {
	t.Helper()
	held := time.Now()
	heldBefore := proxy.Held(tr.method)
	var callOut time.Time
	harness.Eventually(t, 3*time.Minute, "RuntimeHung True with "+tr.reason, func() bool {
		if callOut.IsZero() && proxy.Held(tr.method) > heldBefore {
			callOut = time.Now()
		}
		st, reason := runtimeHung()
		return st == "True" && reason == tr.reason
	}, harness.UnlessExited(d))
	seen := hangSeen{fromHold: time.Since(held)}
	if !callOut.IsZero() {
		seen.fromCallOut = time.Since(callOut)
	}
	measure(t, "runtime_hung_"+tr.name+"_from_hold", seen.fromHold)
	measure(t, "runtime_hung_"+tr.name+"_from_call_out", seen.fromCallOut)
	return seen
}

// measureCadenceBack ends the slowness and records how long the next full
// cycle takes to come: within a period (30 s) once a beat answers on time.
func measureCadenceBack(t *testing.T, tr hangTrial, d *daemon, endSlowness func()) hangSeen {
	t.Helper()
	cycles := func() float64 {
		text, err := d.get("/metrics")
		if err != nil {
			return -1
		}
		return metricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="ok"}`) +
			max(metricValue(text, `hangwatch_cri_probes_total{method="ListContainers",result="slow"}`), 0)
	}
	before := cycles()
	endSlowness()
	ended := time.Now()
	harness.Eventually(t, 2*time.Minute, "a full cycle after the slowness ended", func() bool { return cycles() > before }, harness.UnlessExited(d))
	seen := hangSeen{fromHold: time.Since(ended)}
	measure(t, "cri_cycle_after_"+tr.name, seen.fromHold)
	return seen
}

// firstContainer is a container of the shared containerd's.
func firstContainer(t *testing.T, c *harness.Containerd) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Runtime().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(resp.Containers) == 0 {
		t.Fatalf("the shared containerd's containers: %v (%d)", err, len(resp.GetContainers()))
	}
	return resp.Containers[0].Id
}

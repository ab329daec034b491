package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/crio"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
)

// restartCase is one way a runtime goes away and comes back.
type restartCase struct {
	name     string
	graceful bool          // SIGTERM, else SIGKILL
	down     time.Duration // how long it stays down
	upgrade  bool          // started again on UpgradeBinaries
}

var restartCases = []restartCase{
	{name: "graceful stop, 10s down", graceful: true, down: 10 * time.Second},
	{name: "SIGKILL, 20s down", down: 20 * time.Second},
	{name: "upgrade in place", graceful: true, down: 2 * time.Second, upgrade: true},
}

// TestRunSurvivesRuntimeRestarts: containerd stopped (gracefully or with
// SIGKILL), down a while, and started again, on the same version or the
// next one, against `hangwatch run`. While it is down RuntimeHung is True
// with RuntimeUnreachable; once its new socket answers, RuntimeHung is
// False within two periods (clearAfter 2), with no restart of hangwatch.
func TestRunSurvivesRuntimeRestarts(t *testing.T) {
	harness.Parallel(t)
	c := containerd.StartT(t, 2, 1)
	const period = time.Second
	d := hangwatch.StartDaemon(t, c.Endpoint, "--period", period.String(), "--max-period", "2s", "-t", "1s")
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { s, _, _ := d.Condition(t, "RuntimeHung"); return s == "False" }, harness.UnlessExited(d))
	for _, rc := range restartCases {
		t.Run(rc.name, func(t *testing.T) {
			unreachable, recovered := restartNodeRuntime(t, c, rc, func() (string, string) { s, r, _ := d.Condition(t, "RuntimeHung"); return s, r })
			harness.Measure(t, "restart_"+metricName(rc.name)+"_unreachable_after_stop", unreachable)
			harness.Measure(t, "restart_"+metricName(rc.name)+"_false_after_socket_answers", recovered)
			if recovered > 2*period+hangwatch.GenerousSlack {
				t.Errorf("RuntimeHung False %v after the socket answered, want within two periods (%v) plus slack", recovered, 2*period)
			}
		})
	}
}

// restarter is a runtime the restart tests stop and start again.
type restarter interface {
	StopRuntime(graceful bool)
	// start starts it again and returns once its socket answers CRI Status.
	start(ctx context.Context) error
	String() string
}

// containerdRestarter starts containerd again on its binaries, or, for an
// upgrade, on the next version's.
type containerdRestarter struct {
	*containerd.Containerd
	bin containerd.Binaries
}

func (c containerdRestarter) start(ctx context.Context) error { return c.StartRuntime(ctx, c.bin) }
func (c containerdRestarter) String() string                  { return "containerd " + c.bin.Version }

// restartNodeRuntime is restartRuntime on containerd, upgraded in place
// when rc says so, or on CRI-O (no upgrade: one version is served).
func restartNodeRuntime(t *testing.T, c kubelet.NodeRuntime, rc restartCase, cond func() (string, string)) (unreachable, recovered time.Duration) {
	t.Helper()
	switch c := c.(type) {
	case *crio.CRIO:
		if rc.upgrade {
			t.Skipf("CRI-O %s is the one version the module proxy serves: no upgrade to run", c.Bin.Version)
		}
		return restartRuntime(t, crioRestarter{c}, rc, cond)
	case *containerd.Containerd:
		bin := c.Bin
		if rc.upgrade {
			up, err := containerd.UpgradeBinaries()
			if err != nil {
				t.Skip(err)
			}
			bin = up
		}
		return restartRuntime(t, containerdRestarter{c, bin}, rc, cond)
	}
	t.Fatalf("no restart for %s", c)
	return 0, 0
}

// restartRuntime stops r as rc says, checks that cond reports the runtime
// unreachable for as long as it is down, starts it again, and returns how
// long after the stop RuntimeUnreachable showed and how long after the new
// socket answered the condition went False.
func restartRuntime(t *testing.T, r restarter, rc restartCase, cond func() (string, string)) (unreachable, recovered time.Duration) {
	t.Helper()
	stopped := time.Now()
	r.StopRuntime(rc.graceful)
	harness.Eventually(t, 30*time.Second, "RuntimeHung True (RuntimeUnreachable)", func() bool {
		s, r := cond()
		return s == "True" && r == "RuntimeUnreachable"
	})
	unreachable = time.Since(stopped)
	// The runtime stays down: the condition must hold all along.
	harness.Throughout(t, rc.down-time.Since(stopped), "RuntimeHung True (RuntimeUnreachable) with the runtime down", func() bool {
		s, r := cond()
		return s == "True" && r == "RuntimeUnreachable"
	}, harness.Every(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.start(ctx); err != nil { // returns once its socket answers CRI Status
		t.Fatalf("start %s again: %v", r, err)
	}
	answered := time.Now()
	harness.Eventually(t, time.Minute, "RuntimeHung False after the restart", func() bool { s, _ := cond(); return s == "False" })
	t.Logf("%s: RuntimeUnreachable %v after the stop; RuntimeHung False %v after its socket answered",
		r, unreachable.Round(time.Millisecond), time.Since(answered).Round(time.Millisecond))
	return unreachable, time.Since(answered)
}

// metricName turns a case name into a MEASURE name part.
func metricName(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = append(out, r)
		case r >= 'A' && r <= 'Z':
			out = append(out, r+'a'-'A')
		case len(out) > 0 && out[len(out)-1] != '_':
			out = append(out, '_')
		}
	}
	return string(out)
}

// TestStaticPodSurvivesRuntimeRestarts is TestRunSurvivesRuntimeRestarts
// with the shipped static pod beside a real kubelet, reading the Node: the
// pod mounts the socket's directory, so the socket a restarted containerd
// binds is the one hangwatch dials, without a restart of its pod. (With
// the socket file mounted, it kept dialing the dead one.)
func TestStaticPodSurvivesRuntimeRestarts(t *testing.T) {
	harness.Parallel(t, harness.LaneKmsg)
	n := hangwatch.StartStaticPodNode(t)
	n.WaitHealthy(t)
	// The bound: a heartbeat (2.5 s in the shipped config) that answers
	// wakes a full cycle at once, well within these two old periods.
	const period = 10 * time.Second
	for _, rc := range restartCases {
		t.Run(rc.name, func(t *testing.T) {
			unreachable, recovered := restartNodeRuntime(t, n.C, rc, func() (string, string) {
				c := hangwatch.NodeCond(t, n.CP, n.K.Node, "RuntimeHung")
				if c == nil {
					return "", ""
				}
				return string(c.Status), c.Reason
			})
			harness.Measure(t, "e2e_restart_"+metricName(rc.name)+"_unreachable_after_stop", unreachable)
			harness.Measure(t, "e2e_restart_"+metricName(rc.name)+"_false_after_socket_answers", recovered)
			if recovered > 2*period+hangwatch.GenerousSlack {
				t.Errorf("RuntimeHung False on the Node %v after the socket answered, want within two periods (%v) plus slack", recovered, 2*period)
			}
		})
	}
}

// TestAFrozenRuntimeKilledStaysHung: containerd frozen, RuntimeHung True,
// then SIGKILLed as repair kills it, and not started again. RuntimeHung
// must go from the hang to RuntimeUnreachable and never be False in
// between: the cycle the kill wakes finds every call refused, and the last
// Version beat, answered before the freeze, once turned that healthy for a
// beat, which restarted remedy's wait before the fence. hangwatch runs
// with its defaults (the heartbeat, the PLEG emulation judging between
// beats); every change it made is in its log.
func TestAFrozenRuntimeKilledStaysHung(t *testing.T) {
	harness.Parallel(t)
	c := containerd.StartT(t, 1, 1)
	d := hangwatch.StartDaemon(t, c.Endpoint, "--kernel=false")
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { s, _, _ := d.Condition(t, "RuntimeHung"); return s == "False" }, harness.UnlessExited(d))
	if err := c.Freeze(); err != nil { // no thaw: it is killed frozen
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "RuntimeHung True after the freeze", func() bool { s, _, _ := d.Condition(t, "RuntimeHung"); return s == "True" }, harness.UnlessExited(d))
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	harness.Eventually(t, 30*time.Second, "RuntimeHung True (RuntimeUnreachable)", func() bool {
		s, r, _ := d.Condition(t, "RuntimeHung")
		return s == "True" && r == "RuntimeUnreachable"
	}, harness.UnlessExited(d))
	t.Logf("RuntimeUnreachable %v after the kill", time.Since(killed).Round(time.Millisecond))
	// two heartbeat periods more: a blink comes within one of the kill
	harness.Throughout(t, 5*time.Second, "RuntimeHung True (RuntimeUnreachable) with containerd killed", func() bool {
		s, r, _ := d.Condition(t, "RuntimeHung")
		return s == "True" && r == "RuntimeUnreachable"
	}, harness.Every(200*time.Millisecond))
	log, err := os.ReadFile(d.Log.Name())
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, `"Condition changed" type="RuntimeHung"`) {
			changes = append(changes, line[strings.Index(line, "status="):])
		}
	}
	raised := slices.IndexFunc(changes, func(c string) bool { return strings.HasPrefix(c, `status="True"`) })
	if raised < 0 || slices.ContainsFunc(changes[raised:], func(c string) bool { return !strings.HasPrefix(c, `status="True"`) }) ||
		!strings.Contains(changes[len(changes)-1], "RuntimeUnreachable") {
		t.Errorf("RuntimeHung's changes: %q; want True from the hang on, ending RuntimeUnreachable", changes)
	}
}

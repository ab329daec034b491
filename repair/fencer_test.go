package repair

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeHost is a node whose pods' cgroups are dirs named after their UIDs.
type fakeHost struct {
	stuck   map[string]bool // dir: a task in D state
	killed  []string
	mounted map[string][]string // uid: mount points left after unmount
}

func (h *fakeHost) PodCgroups(uids []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, u := range uids {
		if u != "gone" {
			out[u] = []string{"/cg/pod" + u}
		}
	}
	return out, nil
}

func (h *fakeHost) Check(dir string) error {
	if h.stuck[dir] {
		return errors.New("pid 7 (dd) is in uninterruptible sleep")
	}
	return nil
}

func (h *fakeHost) Kill(_ context.Context, dir string) ([]int, error) {
	h.killed = append(h.killed, dir)
	return []int{1}, nil
}

func (h *fakeHost) UnmountPod(string) ([]string, error) { return nil, nil }

func (h *fakeHost) ReleaseCSI(context.Context, string) ([]string, error) { return nil, nil }

func (h *fakeHost) HeldUnder([]string) ([]string, error) { return nil, nil }

func (h *fakeHost) HeldElsewhere(uid string) ([]string, error) { return h.mounted[uid], nil }

type fakeFenceLink struct {
	order   FenceOrder
	asked   int
	reports []FenceReport
}

func (l *fakeFenceLink) FenceOrder(context.Context) (FenceOrder, error) {
	l.asked++
	return l.order, nil
}
func (l *fakeFenceLink) FenceReport(_ context.Context, r FenceReport) error {
	l.reports = append(l.reports, r)
	return nil
}

type fencerRig struct {
	clk   *clocktesting.FakeClock
	link  *fakeFenceLink
	host  *fakeHost
	notes *notes
	up    bool
	vs    []Verdict
	f     *Fencer
}

func newFencerRig(s FenceSettings) *fencerRig {
	g := &fencerRig{clk: clocktesting.NewFakeClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)), host: &fakeHost{}, notes: &notes{}, up: true,
		vs: []Verdict{{Type: "RuntimeHung", True: true, Reason: "VersionHung"}}}
	g.link = &fakeFenceLink{order: FenceOrder{NodeBootID: "b1", Request: &FenceRequestNote{ID: "f-1", BootID: "b1", ValidFor: time.Minute, SeenFor: time.Second},
		Pods: []FencePod{
			{Namespace: "default", Name: "web-0", UID: "u1", Owner: "StatefulSet", Running: true},
			{Namespace: "kube-system", Name: "kube-proxy-x", UID: "u2", Owner: "DaemonSet", Running: true},
			{Namespace: "kube-system", Name: "etcd-a", UID: "u3", Static: true, Running: true},
			{Namespace: "csi", Name: "plugin", UID: "u4", StaysOutOfService: true, Running: true},
			{Namespace: "default", Name: "pending", UID: "gone"},
		}}}
	g.f = NewFencer(FencerOptions{Settings: s, Clock: g.clk, Verdicts: func() []Verdict { return g.vs },
		Silence: func() (string, time.Duration) { return "Version", 15 * time.Second }, GivenUp: func() (bool, string) { return g.up, "" },
		Link: g.link, Notify: g.notes, BootID: func() (string, error) { return "b1", nil }, Host: g.host})
	return g
}

var fenceOn = FenceSettings{Enabled: true, KillTimeout: time.Second}

// TestFencerStopsTheChosenPodsOnce: a request on this boot stops every
// pod but the static one, the DaemonSet's and the one that tolerates the
// out-of-service taint, and reports them; the same request is not
// carried out twice.
func TestFencerStopsTheChosenPodsOnce(t *testing.T) {
	g := newFencerRig(fenceOn)
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || !g.link.reports[0].Fenced {
		t.Fatalf("reports = %+v, want one fenced", g.link.reports)
	}
	var names []string
	for _, p := range g.link.reports[0].Pods {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "web-0,pending" {
		t.Errorf("fenced %s, want web-0,pending", got)
	}
	if strings.Join(g.host.killed, ",") != "/cg/podu1" {
		t.Errorf("killed %v, want only web-0's cgroup", g.host.killed)
	}
	g.clk.Step(3 * time.Second)
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || len(g.host.killed) != 1 {
		t.Errorf("the same request carried out again: %+v", g.link.reports)
	}
}

// TestFencerRefusals: each reason not to fence reports it impossible
// having killed nothing, or does not ask at all.
func TestFencerRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		change   func(g *fencerRig)
		asked    bool
		impossib string
	}{
		"D state":            {func(g *fencerRig) { g.host.stuck = map[string]bool{"/cg/podu1": true} }, true, "uninterruptible"},
		"another boot":       {func(g *fencerRig) { g.link.order.Request.BootID = "b0" }, true, "boot b0"},
		"old request":        {func(g *fencerRig) { g.link.order.Request.SeenFor = 2 * time.Minute }, true, "first seen"},
		"kernel deadlock":    {func(g *fencerRig) { g.vs = append(g.vs, Verdict{Type: "KernelDeadlock", True: true}) }, true, "KernelDeadlock"},
		"a volume held":      {func(g *fencerRig) { g.host.mounted = map[string][]string{"u1": {"pid 9: /v"}} }, true, "still mounted"},
		"running, no cgroup": {func(g *fencerRig) { g.link.order.Pods[4].Running = true }, true, "cgroup is not found"},
		"repair still at it": {func(g *fencerRig) { g.up = false }, false, ""},
		"one object's hang":  {func(g *fencerRig) { g.vs[0].Reason = "ContainerStatusHung" }, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := newFencerRig(fenceOn)
			c.change(g)
			g.f.Step(context.Background())
			if (g.link.asked > 0) != c.asked {
				t.Fatalf("asked %d times, want asked %v", g.link.asked, c.asked)
			}
			if !c.asked {
				return
			}
			if len(g.link.reports) != 1 || g.link.reports[0].Fenced || !strings.Contains(g.link.reports[0].Why, c.impossib) {
				t.Fatalf("reports = %+v, want impossible: ...%s...", g.link.reports, c.impossib)
			}
			if name != "a volume held" && len(g.host.killed) != 0 {
				t.Errorf("killed %v", g.host.killed)
			}
		})
	}
}

// TestFencerDryRunTellsAndStopsNothing.
func TestFencerDryRunTellsAndStopsNothing(t *testing.T) {
	g := newFencerRig(FenceSettings{Enabled: true, DryRun: true, KillTimeout: time.Second})
	g.f.Step(context.Background())
	if len(g.host.killed) != 0 || len(g.link.reports) != 0 {
		t.Fatalf("dry run killed %v, reported %+v", g.host.killed, g.link.reports)
	}
	if len(g.notes.got) != 1 || !strings.Contains(g.notes.got[0], "FenceDryRun") || !strings.Contains(g.notes.got[0], "default/web-0") {
		t.Errorf("notes = %v", g.notes.got)
	}
}

// TestRepairGivesUpOnlyWhenItCannotCure: off or in dry run it has given
// up; enabled, not before an attempt that could not restart, or a restart
// a wait ago that did not cure.
func TestRepairGivesUpOnlyWhenItCannotCure(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	on := Settings{Enabled: true, RestartRuntimeAfter: 20 * time.Second, MaxRestartsPerHour: 3}
	r := New(Options{Settings: on, Clock: clk, Metrics: NewMetrics()})
	if up, why := r.GivenUp(TargetRuntime); up {
		t.Errorf("before any attempt: given up (%s)", why)
	}
	r.targets[TargetRuntime].outcome, r.targets[TargetRuntime].judged = OutcomeRestarted, clk.Now()
	if up, _ := r.GivenUp(TargetRuntime); up {
		t.Error("just after a restart: given up")
	}
	clk.Step(20 * time.Second)
	if up, why := r.GivenUp(TargetRuntime); !up || !strings.Contains(why, "silent again") {
		t.Errorf("a wait after a restart: %v (%s)", up, why)
	}
	r.targets[TargetRuntime].outcome = OutcomeImpossible
	if up, _ := r.GivenUp(TargetRuntime); !up {
		t.Error("after an impossible attempt: not given up")
	}
	r.Update(Settings{})
	if up, why := r.GivenUp(TargetRuntime); !up || !strings.Contains(why, "off") {
		t.Errorf("off: %v (%s)", up, why)
	}
}

package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/nodelink"
)

// fakeHost is a node whose pods' cgroups are dirs named after their UIDs.
// notes keeps the Events the fence tells.
type notes struct{ got []string }

func (n *notes) Normal(reason, message string)  { n.got = append(n.got, "Normal "+reason+" "+message) }
func (n *notes) Warning(reason, message string) { n.got = append(n.got, "Warning "+reason+" "+message) }

type fakeHost struct {
	stuck    map[string]bool // dir: a task in D state
	killed   []string
	mounted  map[string][]string // uid: mount points left after unmount
	failKill map[string]bool     // dir: Kill fails
	hangCSI  bool                // ReleaseCSI waits for its deadline
	steps    *[]string           // what was done, in order, with the link's
}

func (h *fakeHost) did(step string) {
	if h.steps != nil {
		*h.steps = append(*h.steps, step)
	}
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
	if h.failKill[dir] {
		return nil, errors.New("the cgroup did not empty")
	}
	h.killed = append(h.killed, dir)
	h.did("kill " + dir)
	return []int{1}, nil
}

func (h *fakeHost) UnmountPod(_ context.Context, uid string) ([]string, error) {
	h.did("unmount " + uid)
	return nil, nil
}

func (h *fakeHost) RecordPodVolumes(uid string) (VolumeRecord, error) {
	h.did("record " + uid)
	return VolumeRecord{Pod: uid}, nil
}

func (h *fakeHost) HeldAnywhere(_ context.Context, rec VolumeRecord) ([]string, error) {
	h.did("held " + rec.Pod)
	return h.mounted[rec.Pod], nil
}

func (h *fakeHost) ReleaseCSI(ctx context.Context, uid string) ([]string, error) {
	h.did("release " + uid)
	if h.hangCSI {
		<-ctx.Done()
		return nil, fmt.Errorf("NodeUnpublishVolume: %w", ctx.Err())
	}
	return nil, nil
}

type fakeFenceLink struct {
	order      nodelink.FenceOrder
	asked      int
	reports    []nodelink.FenceReport
	deleted    []string
	failDelete string
	steps      *[]string
}

func (l *fakeFenceLink) FenceOrder(context.Context) (nodelink.FenceOrder, error) {
	l.asked++
	return l.order, nil
}
func (l *fakeFenceLink) FenceDelete(_ context.Context, d nodelink.FenceDeletion) (nodelink.FenceDeleted, error) {
	if l.failDelete != "" {
		return nodelink.FenceDeleted{Failed: l.failDelete}, nil
	}
	for _, p := range d.Pods {
		l.deleted = append(l.deleted, p.Name)
		*l.steps = append(*l.steps, "delete "+p.UID)
	}
	return nodelink.FenceDeleted{}, nil
}

func (l *fakeFenceLink) FenceReport(_ context.Context, r nodelink.FenceReport) error {
	l.reports = append(l.reports, r)
	return nil
}

type fencerRig struct {
	steps []string
	// answers is what the runtime says to the repair process's own probe,
	// in turn ("" : nothing).
	answers []string
	maint   string
	silence time.Duration // of the lifecycle calls
	clk     *clocktesting.FakeClock
	link    *fakeFenceLink
	host    *fakeHost
	notes   *notes
	up      bool
	vs      []nodelink.Condition
	f       *Fencer
}

func newFencerRig(s Settings) *fencerRig {
	g := &fencerRig{clk: clocktesting.NewFakeClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)), host: &fakeHost{}, notes: &notes{}, up: true, silence: 15 * time.Second,
		vs: []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "RuntimeNotResponding"}}}
	g.link = &fakeFenceLink{steps: &g.steps, order: nodelink.FenceOrder{NodeBootID: "b1", Request: &nodelink.FenceRequestNote{ID: "f-1", BootID: "b1", ValidFor: time.Minute, SeenFor: time.Second,
		Deadline: g.clk.Now().Add(time.Minute), OptedIn: true},
		Pods: []nodelink.FencePod{
			{Namespace: "default", Name: "web-0", UID: "u1", Owner: "StatefulSet", Running: true},
			{Namespace: "kube-system", Name: "kube-proxy-x", UID: "u2", Owner: "DaemonSet", Running: true},
			{Namespace: "kube-system", Name: "etcd-a", UID: "u3", Static: true, Running: true},
			{Namespace: "kube-system", Name: "kube-apiserver-a", UID: "0c4f0a1b2d3e4f5061728394a5b6c7d8", Running: true}, // static by its UID alone
			{Namespace: "csi", Name: "plugin", UID: "u4", StaysOutOfService: true, Running: true},
			{Namespace: "default", Name: "pending", UID: "gone"},
		}}}
	g.f = NewFencer(FencerOptions{Settings: s, Clock: g.clk, Conditions: func() []nodelink.Condition { return g.vs },
		Silence: func() (string, time.Duration) { return "the pod lifecycle's calls", g.silence }, GivenUp: func() (bool, string) { return g.up, "" },
		Link: g.link, Notify: g.notes, BootID: func() (string, error) { return "b1", nil }, Host: g.host,
		Probe: func(context.Context) string {
			if len(g.answers) == 0 {
				return ""
			}
			a := g.answers[0]
			g.answers = g.answers[1:]
			return a
		},
		Maintenance: func(context.Context) (string, error) { return g.maint, nil }})
	g.host.steps = &g.steps
	return g
}

var fenceOn = Settings{Enabled: true, KillTimeout: time.Second}

// TestFencerStopsTheChosenPodsOnce: a request on this boot stops every
// pod but the static ones (by the mirror annotation or by the UID the
// kubelet hashed) and the one that tolerates the out-of-service taint for
// good; a DaemonSet's pod that does not is fenced too. It deletes them
// all before it releases any volume, reports them, and does not carry
// the same request out twice.
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
	if got := strings.Join(names, ","); got != "web-0,kube-proxy-x,pending" {
		t.Errorf("fenced %s, want web-0,kube-proxy-x,pending", got)
	}
	want := "record u1,record u2,record gone,kill /cg/podu1,kill /cg/podu2,delete u1,delete u2,delete gone," +
		"release u1,unmount u1,release u2,unmount u2,release gone,unmount gone,held u1,held u2,held gone"
	if got := strings.Join(g.steps, ","); got != want {
		t.Errorf("steps:\n got %s\nwant %s", got, want)
	}
	g.clk.Step(3 * time.Second)
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || len(g.host.killed) != 2 {
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
		"kernel deadlock":    {func(g *fencerRig) { g.vs = append(g.vs, nodelink.Condition{Type: "KernelDeadlock", True: true}) }, true, "KernelDeadlock"},
		"a volume held":      {func(g *fencerRig) { g.host.mounted = map[string][]string{"u1": {"pid 9: /v"}} }, true, "still mounted"},
		"running, no cgroup": {func(g *fencerRig) { g.link.order.Pods[5].Running = true }, true, "cgroup is not found"},
		"repair still at it": {func(g *fencerRig) { g.up = false }, false, ""},
		"one object's hang":  {func(g *fencerRig) { g.vs[0].Reason = "ContainerStatusHung" }, false, ""},
		"only ImageFsInfo":   {func(g *fencerRig) { g.vs[0].Reason, g.silence = "ImageFsInfoHung", 4*time.Second }, false, ""},
		"late answers":       {func(g *fencerRig) { g.silence = 5 * time.Second }, false, ""},
		"stopped, not by us": {func(g *fencerRig) { g.vs[0].Reason = "RuntimeUnreachable" }, false, ""},
		"not opted in":       {func(g *fencerRig) { g.link.order.Request.OptedIn = false }, true, "opt-in label"},
		"past its deadline": {func(g *fencerRig) {
			g.link.order.Request.Deadline = g.clk.Now().Add(-fenceSkewAllowance - time.Second)
		}, true, "deadline"},
		"maintenance":         {func(g *fencerRig) { g.maint = "NodeMaintenance" }, true, "administrator"},
		"the runtime answers": {func(g *fencerRig) { g.answers = []string{"Status answered in 3ms"} }, true, "answers on its socket"},
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

// TestFencerFencesARuntimeThatNeverCameBack: nothing listens on the
// runtime's socket after repair restarted it in this spell (a start that
// wedges before it serves): the fence carries the request out, as for a
// runtime that hangs. A runtime nothing listens on that repair did not
// restart is an operator's (TestFencerRefusals, "stopped, not by us").
func TestFencerFencesARuntimeThatNeverCameBack(t *testing.T) {
	g := newFencerRig(fenceOn)
	g.vs[0].Reason, g.silence = "RuntimeUnreachable", 0 // each call refused at once
	g.f.o.Restarted = func() bool { return true }
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || !g.link.reports[0].Fenced {
		t.Fatalf("reports = %+v, want one fenced", g.link.reports)
	}
}

// TestFencerDryRunTellsAndStopsNothing.
func TestFencerDryRunTellsAndStopsNothing(t *testing.T) {
	g := newFencerRig(Settings{Enabled: true, DryRun: true, KillTimeout: time.Second})
	g.f.Step(context.Background())
	if len(g.host.killed) != 0 || len(g.link.reports) != 0 {
		t.Fatalf("dry run killed %v, reported %+v", g.host.killed, g.link.reports)
	}
	if len(g.notes.got) != 1 || !strings.Contains(g.notes.got[0], "FenceDryRun") || !strings.Contains(g.notes.got[0], "default/web-0") {
		t.Errorf("notes = %v", g.notes.got)
	}
}

// R: every pod's volume mounts recorded, before anything is killed.
const R = "record u1,record u2,record gone,"

// TestFencerNeverLeavesAKilledPodUndeleted: whatever fails after the
// kill, every pod killed is deleted before any volume is released, and a
// volume is released only when every killed pod is deleted and the
// runtime is still silent.
func TestFencerNeverLeavesAKilledPodUndeleted(t *testing.T) {
	for name, c := range map[string]struct {
		change func(g *fencerRig)
		steps  string
		why    string
	}{
		"the second kill fails": {func(g *fencerRig) { g.host.failKill = map[string]bool{"/cg/podu2": true} },
			R + "kill /cg/podu1,delete u1", "the pods killed before were deleted and their volumes left mounted"},
		"the deletion fails": {func(g *fencerRig) { g.link.failDelete = "deleting pod default/web-0: Forbidden" },
			R + "kill /cg/podu1,kill /cg/podu2", "no volume is released: deleting pod default/web-0"},
		"the runtime thaws after the kill": {func(g *fencerRig) { g.answers = []string{"", "Status answered in 1ms"} },
			R + "kill /cg/podu1,kill /cg/podu2,delete u1,delete u2,delete gone", "the runtime answered after the kill"},
		"a volume is held": {func(g *fencerRig) { g.host.mounted = map[string][]string{"u1": {"pid 9: /data"}} },
			R + "kill /cg/podu1,kill /cg/podu2,delete u1,delete u2,delete gone,release u1,unmount u1,release u2,unmount u2,release gone,unmount gone,held u1",
			"its volumes are still mounted: pid 9: /data"},
	} {
		t.Run(name, func(t *testing.T) {
			g := newFencerRig(fenceOn)
			c.change(g)
			g.f.Step(context.Background())
			if got := strings.Join(g.steps, ","); got != c.steps {
				t.Errorf("steps:\n got %s\nwant %s", got, c.steps)
			}
			if len(g.link.reports) != 1 || g.link.reports[0].Fenced || !strings.Contains(g.link.reports[0].Why, c.why) {
				t.Fatalf("reports = %+v, want impossible: ...%s...", g.link.reports, c.why)
			}
		})
	}
}

// TestFencerCSIHangIsImpossibleWithinItsDeadline: a CSI node plugin that
// never answers makes the fence impossible once KillTimeout has passed.
func TestFencerCSIHangIsImpossibleWithinItsDeadline(t *testing.T) {
	g := newFencerRig(Settings{Enabled: true, KillTimeout: 50 * time.Millisecond})
	g.host.hangCSI = true
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || g.link.reports[0].Fenced || !strings.Contains(g.link.reports[0].Why, "deadline") {
		t.Fatalf("reports = %+v, want impossible past the deadline", g.link.reports)
	}
}

// TestFencerKeepsTheFirstSightAcrossAgentRestarts: the agent's count of
// how long it has seen the request starts again when it restarts; the
// repair process's own does not.
func TestFencerKeepsTheFirstSightAcrossAgentRestarts(t *testing.T) {
	g := newFencerRig(fenceOn)
	g.up = false // repair still at it: the order is read, not carried out
	g.f.readOrder(context.Background())
	g.clk.Step(2 * time.Minute)
	g.up = true
	g.link.order.Request.SeenFor = time.Second // a restarted agent
	g.link.order.Request.Deadline = g.clk.Now().Add(time.Minute)
	g.f.Step(context.Background())
	if len(g.link.reports) != 1 || g.link.reports[0].Fenced || !strings.Contains(g.link.reports[0].Why, "first seen 2m0s ago") {
		t.Fatalf("reports = %+v, want impossible: first seen 2m0s ago", g.link.reports)
	}
}

// TestFencerDropsAReportTheAgentNeverTakes: the next request is heard.
func TestFencerDropsAReportTheAgentNeverTakes(t *testing.T) {
	g := newFencerRig(fenceOn)
	refusing := &refusingLink{fakeFenceLink: g.link}
	g.f.o.Link = refusing
	g.f.Step(context.Background())
	if g.f.pending == nil {
		t.Fatal("no report pending")
	}
	g.clk.Step(fenceReportGiveUp)
	g.f.Step(context.Background())
	if g.f.pending != nil {
		t.Fatal("a report refused for 2 minutes is still pending")
	}
}

type refusingLink struct{ *fakeFenceLink }

func (refusingLink) FenceReport(context.Context, nodelink.FenceReport) error {
	return errors.New("fence report for f-1: the Node's request is \"\"")
}

// TestALongWhyStillReachesTheNode: a reason longer than the link takes
// (a CSI socket's path under a long temp dir, and its error) is cut to it,
// so the agent takes the report and the request is answered; a clean
// clone's test run saw the agent refuse a 530-byte why every second until
// the request timed out.
func TestALongWhyStillReachesTheNode(t *testing.T) {
	why := "pod default/web-0: " + strings.Repeat("é/long/path", 60)
	rep := nodelink.FenceReport{RequestID: "f-1", BootID: "b1", Why: nodelink.ShortWhy(why)}
	if err := rep.Check(); err != nil {
		t.Fatalf("a cut why: %v", err)
	}
	if len(rep.Why) > nodelink.MaxFenceWhy || !strings.HasSuffix(rep.Why, "…") || !utf8.ValidString(rep.Why) {
		t.Errorf("why %d bytes, valid %v: %q", len(rep.Why), utf8.ValidString(rep.Why), rep.Why)
	}
	if nodelink.ShortWhy("short") != "short" {
		t.Errorf("a short why changed")
	}
}

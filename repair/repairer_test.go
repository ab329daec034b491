package repair

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeSystemd is a Manager over one unit.
type fakeSystemd struct {
	unit   Unit
	kills  int
	killed []string
	err    error
}

func (f *fakeSystemd) UnitOfPID(context.Context, uint32) (string, error) { return f.unit.Name, nil }
func (f *fakeSystemd) Unit(_ context.Context, name string) (Unit, error) {
	if name != f.unit.Name {
		return Unit{Name: name}, fmt.Errorf("unit %s: %w", name, ErrNoUnit)
	}
	return f.unit, nil
}
func (f *fakeSystemd) KillMain(_ context.Context, name string) error {
	f.kills++
	f.killed = append(f.killed, name)
	return f.err
}
func (f *fakeSystemd) Close() {}

type notes struct{ got []string }

func (n *notes) Normal(reason, message string)  { n.got = append(n.got, "Normal "+reason+" "+message) }
func (n *notes) Warning(reason, message string) { n.got = append(n.got, "Warning "+reason+" "+message) }

// rig is a Repairer on a fake clock, with systemd's socket and the CRI
// socket both served by this process, and a /proc that holds this process
// with the state the test gives.
type rig struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	sd       *fakeSystemd
	notes    *notes
	reg      metrics.KubeRegistry
	verdicts []Verdict
	cycles   uint64
	proc     string
	r        *Repairer
}

func newRig(t *testing.T, s Settings) *rig {
	dir := shortTempDir(t)
	g := &rig{t: t, clk: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), notes: &notes{},
		reg: metrics.NewKubeRegistry(), proc: filepath.Join(dir, "proc"),
		sd: &fakeSystemd{unit: Unit{Name: "containerd.service", LoadState: "loaded", ActiveState: "active", Restart: "always", MainPID: uint32(os.Getpid())}}}
	s.SystemdSocket, s.Enabled = listen(t, filepath.Join(dir, "private")), true
	if s.MaxRestartsPerHour == 0 {
		s.MaxRestartsPerHour = DefaultMaxRestartsPerHour
	}
	g.setState('S')
	g.r = New(Options{Settings: s, Clock: g.clk, Verdicts: func() []Verdict { return g.verdicts },
		Progress:  map[Target]func() uint64{TargetRuntime: func() uint64 { return g.cycles }},
		CRISocket: "unix://" + listen(t, filepath.Join(dir, "cri.sock")), Proc: Procfs{Root: g.proc},
		Dial:    func(context.Context, string) (Manager, error) { return g.sd, nil },
		Metrics: NewMetrics(g.reg), Notify: g.notes})
	return g
}

// shortTempDir is a temp dir whose sockets fit sun_path's 108 bytes,
// whatever the test's name (t.TempDir's path holds it).
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "hwr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func listen(t *testing.T, path string) string {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return path
}

// setState writes this process into the fake /proc in state s.
func (g *rig) setState(s byte) {
	pid := fmt.Sprint(os.Getpid())
	dir := filepath.Join(g.proc, pid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		g.t.Fatal(err)
	}
	stat := fmt.Sprintf("%s (containerd (x)) %c 1 1 1\n", pid, s)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tcontainerd\nNSpid:\t"+pid+"\n"), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// run steps the clock a second at a time for d, a cycle every 2.5s.
func (g *rig) run(d time.Duration) {
	for end := g.clk.Now().Add(d); g.clk.Now().Before(end); {
		g.clk.Step(500 * time.Millisecond)
		if g.clk.Now().UnixMilli()%2500 == 0 {
			g.cycles++
		}
		if g.clk.Now().UnixMilli()%1000 == 0 {
			g.r.Step(context.Background())
		}
	}
}

func (g *rig) hang(reason string) {
	g.verdicts = []Verdict{{Type: "RuntimeHung", True: true, Reason: reason, Since: g.clk.Now()}}
}

func (g *rig) count(outcome string) int {
	v, err := testutil.GetCounterMetricValue(g.r.o.Metrics.repairs.WithLabelValues("runtime", outcome))
	if err != nil {
		g.t.Fatal(err)
	}
	return int(v)
}

func TestRuntimeRestartedAfterItsTimeAndNotBefore(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(2 * time.Minute) // past the start-up minute, healthy
	g.hang("ListPodSandboxHung")
	g.run(19 * time.Second)
	if g.sd.kills != 0 {
		t.Fatalf("killed after 19s of a 20s wait")
	}
	g.run(time.Second)
	if g.sd.kills != 1 || g.count(OutcomeRestarted) != 1 {
		t.Fatalf("kills = %d, restarted = %d after 20s, want 1", g.sd.kills, g.count(OutcomeRestarted))
	}
	want := "Normal RuntimeRestarted hangwatch restarted containerd.service (SIGKILL to its main process, PID"
	if len(g.notes.got) != 1 || !strings.HasPrefix(g.notes.got[0], want) || !strings.HasSuffix(g.notes.got[0], "ListPodSandboxHung for 20s") {
		t.Errorf("events = %q, want one %q ... ListPodSandboxHung for 20s", g.notes.got, want)
	}
}

func TestAHungObjectCallNeverRestarts(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("ContainerStatusHung")
	g.run(10 * time.Minute)
	g.hang("RuntimeUnreachable")
	g.run(10 * time.Minute)
	if g.sd.kills != 0 || len(g.notes.got) != 0 {
		t.Errorf("kills = %d, events %q; a container's hang or a closed socket is not cured by a kill", g.sd.kills, g.notes.got)
	}
}

func TestNothingInTheFirstMinute(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("RuntimeNotResponding") // restored True from the Node at start, say
	g.run(59 * time.Second)
	if g.sd.kills != 0 {
		t.Fatalf("killed %d times in the first minute", g.sd.kills)
	}
	g.run(time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d at the end of the first minute, want 1", g.sd.kills)
	}
}

func TestBudgetStopsRestartsForTheHour(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(time.Minute)
	g.hang("VersionHung") // and the restarts do not cure it
	g.run(10 * time.Minute)
	if g.sd.kills != 3 || g.count(OutcomeBudgetSpent) != 1 {
		t.Fatalf("kills = %d, budget-spent told %d times in 10 min of a hang, want 3 and 1", g.sd.kills, g.count(OutcomeBudgetSpent))
	}
	left, _ := testutil.GetGaugeMetricValue(g.r.o.Metrics.left.WithLabelValues("runtime"))
	if left != 0 {
		t.Errorf("budget remaining = %v, want 0", left)
	}
	g.run(time.Hour)
	if g.sd.kills != 6 {
		t.Errorf("kills = %d an hour later, want the budget back (6)", g.sd.kills)
	}
}

func TestRestartWaitsForTheRuntimeToBeProbedAgain(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(time.Minute)
	g.hang("VersionHung")
	g.run(20 * time.Second)
	stuck := g.cycles
	g.r.o.Progress[TargetRuntime] = func() uint64 { return stuck } // no cycle completes
	g.run(5 * time.Minute)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d while no probe completed after the restart, want 1", g.sd.kills)
	}
}

// TestAReasonThatFlickersAfterARestartWaitsAgain: after a restart the
// condition may name a per-object call for a moment (its Since unchanged
// from the first freeze); when the whole-runtime reason comes back, the
// next restart is still a whole wait after the last, not due at once from
// the condition's first transition.
func TestAReasonThatFlickersAfterARestartWaitsAgain(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(time.Minute)
	g.hang("VersionHung")
	first := g.verdicts[0].Since
	g.run(20 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d, want 1", g.sd.kills)
	}
	g.verdicts = []Verdict{{Type: "RuntimeHung", True: true, Reason: "PodSandboxStatusHung", Since: first}}
	g.run(3 * time.Second)
	g.verdicts = []Verdict{{Type: "RuntimeHung", True: true, Reason: "ListPodSandboxHung", Since: first}}
	g.run(16 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d 19s after the restart; want no second restart within a wait of the first", g.sd.kills)
	}
	g.run(6 * time.Second)
	if g.sd.kills != 2 {
		t.Errorf("kills = %d, want the second restart once the reason was back for its wait", g.sd.kills)
	}
}

func TestGuardsThatMakeRepairImpossibleOrRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		setup   func(g *rig)
		outcome string
		says    string
	}{
		{"uninterruptible", func(g *rig) { g.setState('D') }, OutcomeImpossible, "in uninterruptible sleep (D)"},
		{"kernel deadlock", func(g *rig) {
			g.verdicts = append(g.verdicts, Verdict{Type: "KernelDeadlock", True: true, Reason: "TaskBlocked"})
		}, OutcomeImpossible, "KernelDeadlock is True"},
		{"no restart policy", func(g *rig) { g.sd.unit.Restart = "no" }, OutcomeRefused, "Restart=no, so systemd would not start it again"},
		{"no systemd", func(g *rig) {
			g.r.o.Dial = func(context.Context, string) (Manager, error) { return nil, errors.New("no such file") }
		}, OutcomeRefused, "no such file"},
		{"kill fails", func(g *rig) { g.sd.err = errors.New("access denied") }, OutcomeFailed, "access denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
			g.run(time.Minute)
			g.hang("ListContainersHung")
			c.setup(g)
			g.run(5 * time.Minute)
			if c.outcome != OutcomeFailed && g.sd.kills != 0 {
				t.Errorf("killed %d times", g.sd.kills)
			}
			if g.count(c.outcome) != 1 || len(g.notes.got) != 1 || !strings.Contains(g.notes.got[0], c.says) {
				t.Errorf("%s counted %d times, events %q; want once, saying %q", c.outcome, g.count(c.outcome), g.notes.got, c.says)
			}
		})
	}
}

func TestDryRunAndReloadOff(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, DryRun: true})
	g.run(time.Minute)
	g.hang("StatusHung")
	g.run(20 * time.Second)
	if g.sd.kills != 0 || g.count(OutcomeDryRun) != 1 || !strings.HasPrefix(g.notes.got[0], "Normal RepairDryRun hangwatch dry run: would restart containerd.service") {
		t.Fatalf("kills = %d, dry runs %d, events %q", g.sd.kills, g.count(OutcomeDryRun), g.notes.got)
	}
	s := g.r.settings
	s.DryRun, s.Enabled = false, false
	g.r.Update(s)
	g.run(time.Hour)
	if g.sd.kills != 0 || len(g.notes.got) != 1 {
		t.Errorf("after repair was turned off: kills = %d, events %q", g.sd.kills, g.notes.got)
	}
}

func TestKubeletRestartedOnlyWhenItStopsAnsweringOnTheNode(t *testing.T) {
	g := newRig(t, Settings{RestartKubeletAfter: 20 * time.Second, KubeletUnit: "kubelet.service"})
	g.sd.unit.Name = "kubelet.service"
	g.run(time.Minute)
	g.verdicts = []Verdict{{Type: "KubeletUnresponsive", True: true, Reason: "NodeLeaseNotRenewed"}}
	g.run(5 * time.Minute)
	if g.sd.kills != 0 {
		t.Fatalf("a Lease not renewed while the kubelet answers restarted it")
	}
	g.verdicts = []Verdict{{Type: "KubeletUnresponsive", True: true, Reason: ReasonKubeletSilent, Since: g.clk.Now()}}
	g.run(20 * time.Second)
	if len(g.sd.killed) != 1 || g.sd.killed[0] != "kubelet.service" || !strings.HasPrefix(g.notes.got[0], "Normal KubeletRestarted") {
		t.Errorf("killed %q, events %q; want kubelet.service, KubeletRestarted", g.sd.killed, g.notes.got)
	}
}

func TestParseStatAndNSpid(t *testing.T) {
	for in, want := range map[string]byte{"1 (a) S 0": 'S', "7 (we (ird)) D 1 2": 'D', "9 (x y) Z 1": 'Z'} {
		if got, err := parseStatState([]byte(in)); err != nil || got != want {
			t.Errorf("parseStatState(%q) = %c, %v; want %c", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1 (a)", "no paren"} {
		if _, err := parseStatState([]byte(bad)); err == nil {
			t.Errorf("parseStatState(%q) took it", bad)
		}
	}
	if got, err := parseNSpid([]byte("Name:\tx\nNSpid:\t4021\t7\n")); err != nil || fmt.Sprint(got) != "[4021 7]" {
		t.Errorf("parseNSpid = %v, %v", got, err)
	}
	if _, err := parseNSpid([]byte("NSpid:\tx\n")); err == nil || !strings.Contains(err.Error(), `"x" is not a PID`) {
		t.Errorf("parseNSpid of a bad line: %v", err)
	}
}

func FuzzParseStatState(f *testing.F) {
	f.Add([]byte("7 (we (ird)) D 1 2"))
	f.Fuzz(func(_ *testing.T, b []byte) { _, _ = parseStatState(b) })
}

func FuzzParseNSpid(f *testing.F) {
	f.Add([]byte("NSpid:\t4021\t7\n"))
	f.Fuzz(func(_ *testing.T, b []byte) { _, _ = parseNSpid(b) })
}

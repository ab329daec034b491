package repair

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/nodelink"
)

// fakeSystemd is a Manager over one unit.
type fakeSystemd struct {
	unit   Unit
	kills  int
	killed []string
	err    error
	// units names the unit of a PID; unlisted: the unit's
	units map[uint32]string
	// procs are the unit's processes besides its main one
	procs []uint32
	// onKill runs as a kill is about to be sent
	onKill func()
}

func (f *fakeSystemd) UnitOfPID(_ context.Context, pid uint32) (string, error) {
	if name, ok := f.units[pid]; ok {
		return name, nil
	}
	return f.unit.Name, nil
}
func (f *fakeSystemd) Unit(_ context.Context, name string) (Unit, error) {
	if name != f.unit.Name {
		return Unit{Name: name}, fmt.Errorf("unit %s: %w", name, ErrNoUnit)
	}
	return f.unit, nil
}
func (f *fakeSystemd) Processes(_ context.Context, name string) ([]uint32, error) {
	if name != f.unit.Name {
		return nil, fmt.Errorf("unit %s: %w", name, ErrNoUnit)
	}
	return append([]uint32{f.unit.MainPID}, f.procs...), nil
}

// KillMain sends nothing on a context that has ended, as godbus does.
func (f *fakeSystemd) KillMain(ctx context.Context, name string) error {
	if f.onKill != nil {
		f.onKill()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kill the main process of %s: %w", name, err)
	}
	f.kills++
	f.killed = append(f.killed, name)
	return f.err
}
func (f *fakeSystemd) Close() {}

type notes struct{ got []string }

func (n *notes) Normal(reason, message string)  { n.got = append(n.got, "Normal "+reason+" "+message) }
func (n *notes) Warning(reason, message string) { n.got = append(n.got, "Warning "+reason+" "+message) }

// rig is a Repairer on a fake clock, with systemd's socket and the CRI
// socket both served by this process, a /proc that holds this process
// with the state the test gives, a budget file, and a silence the test
// sets: the runtime has given no answer since silentSince (zero: it
// answers).
type rig struct {
	t           *testing.T
	clk         *clocktesting.FakeClock
	sd          *fakeSystemd
	notes       *notes
	conds       []nodelink.Condition
	silentSince time.Time
	maintenance string
	proc        string
	dir         string
	settings    Settings
	sockets     atomic.Int32
	r           *Repairer
	// boot is the node's boot clock, stepped with clk by run but not by a
	// step of the wall clock
	bootID string
	uptime time.Duration
}

// t0 is the rig's start; the runtime's main process started an hour
// before.
var t0 = time.Unix(1_800_000_000, 0)

func newRig(t *testing.T, s Settings) *rig {
	dir := shortTempDir(t)
	g := &rig{t: t, clk: clocktesting.NewFakeClock(t0), notes: &notes{}, dir: dir, proc: filepath.Join(dir, "proc"),
		sd: &fakeSystemd{unit: Unit{Name: "containerd.service", LoadState: "loaded", ActiveState: "active", Restart: "always",
			KillMode: "process", MainPID: uint32(os.Getpid()), MainStarted: t0.Add(-time.Hour)}},
		bootID: "boot-1", uptime: 3 * time.Hour}
	s.SystemdSocket, s.Enabled = listen(t, filepath.Join(dir, "private")), true
	if s.MaxRestartsPerHour == 0 {
		s.MaxRestartsPerHour = DefaultMaxRestartsPerHour
	}
	if s.StateFile == "" {
		s.StateFile = filepath.Join(dir, "budget.json")
	}
	g.settings = s
	g.setState('S')
	g.r = g.newRepairer()
	return g
}

// newRepairer is a new Repairer over the rig, as after hangwatch restarts.
func (g *rig) newRepairer() *Repairer {
	silence := func() (string, time.Duration) {
		if g.silentSince.IsZero() {
			return "", 0
		}
		return "Version", g.clk.Since(g.silentSince)
	}
	return New(Options{Settings: g.settings, Clock: g.clk, Conditions: func() []nodelink.Condition { return g.conds },
		Unanswered:  map[Target]nodelink.Silence{TargetRuntime: silence, TargetKubelet: silence},
		Maintenance: func(context.Context) (string, error) { return g.maintenance, nil },
		CRISocket:   "unix://" + listen(g.t, filepath.Join(g.dir, fmt.Sprintf("cri%d.sock", g.sockets.Add(1)))), Proc: Procfs{Root: g.proc},
		Dial:    func(context.Context, string) (Manager, error) { return g.sd, nil },
		Boot:    func() (Boot, error) { return Boot{ID: g.bootID, Since: g.uptime}, nil },
		Metrics: NewMetrics(), Notify: g.notes})
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

// setState writes this process into the fake /proc, its leader in state
// s and one other thread in S.
func (g *rig) setState(s byte) {
	g.setThreads(s, 'S')
}

// setThreads writes this process into the fake /proc with its leader in
// state leader and a second thread in state other.
func (g *rig) setThreads(leader, other byte) {
	g.writeProc(os.Getpid(), "containerd", leader, other)
}

func (g *rig) writeProc(pid int, name string, leader, other byte) {
	id := fmt.Sprint(pid)
	dir := filepath.Join(g.proc, id)
	for tid, st := range map[string]byte{id: leader, id + "1": other} {
		task := filepath.Join(dir, "task", tid)
		if err := os.MkdirAll(task, 0o755); err != nil {
			g.t.Fatal(err)
		}
		stat := fmt.Sprintf("%s (%s (x)) %c 1 1 1\n", tid, name, st)
		if err := os.WriteFile(filepath.Join(task, "stat"), []byte(stat), 0o644); err != nil {
			g.t.Fatal(err)
		}
	}
	stat := fmt.Sprintf("%s (%s (x)) %c 1 1 1\n", id, name, leader)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\t"+name+"\nNSpid:\t"+id+"\n"), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// run steps the clock half a second at a time for d, judging every second.
func (g *rig) run(d time.Duration) {
	for end := g.clk.Now().Add(d); g.clk.Now().Before(end); {
		g.step(500 * time.Millisecond)
		if g.clk.Now().UnixMilli()%1000 == 0 {
			g.r.Step(context.Background())
		}
	}
}

// step moves the wall clock and the boot clock by d.
func (g *rig) step(d time.Duration) {
	g.clk.Step(d)
	g.uptime += d
}

// hang raises RuntimeHung and makes the runtime silent from now.
func (g *rig) hang(reason string) {
	g.conds = []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: reason}}
	g.silentSince = g.clk.Now()
}

// restarted is what a restart does: a new main process, answering.
func (g *rig) restartedAt(at time.Time) {
	g.sd.unit.MainStarted = at
}

func (g *rig) count(outcome string) int {
	return int(g.r.o.Metrics.Tally().Repairs[TargetRuntime][outcome])
}

func TestRuntimeRestartedAfterItsTimeAndNotBefore(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(2 * time.Minute) // healthy
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
	if len(g.notes.got) != 1 || !strings.HasPrefix(g.notes.got[0], want) || !strings.HasSuffix(g.notes.got[0], "ListPodSandboxHung, and Version unanswered for 20s") {
		t.Errorf("events = %q, want one %q ... ListPodSandboxHung, and Version unanswered for 20s", g.notes.got, want)
	}
}

// TestSlowButAnsweringIsNeverRestarted: every call answers, each 2.1-3 s
// late, just past the detection timeout, so RuntimeHung stays True
// without a break for 3 minutes; no answer was ever missing for 20 s, so
// nothing is killed (the review saw 3 kills in 150 s).
func TestSlowButAnsweringIsNeverRestarted(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.conds = []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "ListContainersHung"}}
	for end := g.clk.Now().Add(3 * time.Minute); g.clk.Now().Before(end); {
		g.silentSince = g.clk.Now() // a call sent now answers in 2.5-3 s
		g.run(3 * time.Second)
	}
	if g.sd.kills != 0 || len(g.notes.got) != 0 {
		t.Fatalf("kills = %d, events %q for a runtime that answered every call", g.sd.kills, g.notes.got)
	}
}

// TestSilenceIsTimedFromTheUnansweredCall: a condition True for 40 s for a
// reason repair does not act on (RuntimeUnreachable: stopped for an
// upgrade), then a slow first answer, does not make the kill due at once:
// the wait is timed from the call that went unanswered, and a main process
// younger than 3 waits is not killed at all.
func TestSilenceIsTimedFromTheUnansweredCall(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.run(time.Minute)
	g.conds = []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "RuntimeUnreachable"}}
	g.run(40 * time.Second)
	g.restartedAt(g.clk.Now()) // the operator starts the new containerd
	g.conds = []nodelink.Condition{{Type: "RuntimeHung", True: true, Reason: "ListPodSandboxHung"}}
	g.silentSince = g.clk.Now()
	g.run(5 * time.Second)
	if g.sd.kills != 0 {
		t.Fatalf("killed %d times 5s after the first slow answer", g.sd.kills)
	}
	g.run(50 * time.Second) // silent 55s now, but the main process is 55s old
	if g.sd.kills != 0 || len(g.notes.got) != 0 {
		t.Fatalf("a main process under 60s old killed %d times, events %q", g.sd.kills, g.notes.got)
	}
	g.run(6 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d once the main process was a minute old and still silent, want 1", g.sd.kills)
	}
}

func TestAHungObjectCallOrAClosedSocketNeverRestarts(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("ContainerStatusHung")
	g.silentSince = time.Time{} // the whole-runtime calls answer
	g.run(10 * time.Minute)
	g.hang("RuntimeUnreachable")
	g.run(10 * time.Minute)
	if g.sd.kills != 0 || len(g.notes.got) != 0 {
		t.Errorf("kills = %d, events %q; a container's hang or a closed socket is not cured by a kill", g.sd.kills, g.notes.got)
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
	if left := g.r.o.Metrics.Tally().Left[TargetRuntime]; left != 0 {
		t.Errorf("budget remaining = %v, want 0", left)
	}
	g.run(time.Hour)
	if g.sd.kills != 6 {
		t.Errorf("kills = %d an hour later, want the budget back (6)", g.sd.kills)
	}
}

// TestTheBudgetSurvivesHangwatchRestarts: hangwatch started again 20
// times in an hour (OOM, crash loop, rollouts) during a hang no restart
// cures still makes at most maxRestartsPerHour kills: the attempts are
// kept in the state file (the review saw 60 kills against 3).
func TestTheBudgetSurvivesHangwatchRestarts(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("VersionHung")
	for range 20 {
		g.r = g.newRepairer()
		g.silentSince = g.clk.Now() // the new hangwatch's first calls
		g.run(3 * time.Minute)
	}
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d in an hour of 20 hangwatch starts, want 3", g.sd.kills)
	}
	raw, err := os.ReadFile(g.settings.StateFile)
	if err != nil || !strings.Contains(string(raw), `"runtime":[`) {
		t.Fatalf("state file: %s, %v", raw, err)
	}
}

// TestAnUnreadableBudgetRefuses: a state file that cannot be parsed is
// not taken as an empty budget.
func TestAnUnreadableBudgetRefuses(t *testing.T) {
	dir := shortTempDir(t)
	path := filepath.Join(dir, "budget.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, StateFile: path})
	g.hang("VersionHung")
	g.run(time.Minute)
	if g.sd.kills != 0 || g.count(OutcomeRefused) != 1 || !strings.Contains(g.notes.got[0], "repair.stateFile "+path) {
		t.Fatalf("kills = %d, refused %d, events %q", g.sd.kills, g.count(OutcomeRefused), g.notes.got)
	}
	if err := os.Remove(path); err != nil { // as the Event says
		t.Fatal(err)
	}
	g.run(21 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d once the file was removed, want 1", g.sd.kills)
	}
}

// TestTwoHangwatchesShareTheBudget: two hangwatch processes on one node (a
// rollout's surge) read each other's attempts from the file.
func TestTwoHangwatchesShareTheBudget(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	second := g.newRepairer()
	g.hang("VersionHung")
	for end := g.clk.Now().Add(20 * time.Minute); g.clk.Now().Before(end); {
		g.step(time.Second)
		g.r.Step(context.Background())
		second.Step(context.Background())
	}
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d by two hangwatches in 20 min, want 3", g.sd.kills)
	}
}

// TestEveryKillSentCounts: a kill whose D-Bus answer failed (it may have
// timed out after systemd acted) counts against the budget.
func TestEveryKillSentCounts(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.sd.err = errors.New("context deadline exceeded")
	g.hang("VersionHung")
	g.run(10 * time.Minute)
	if g.sd.kills != 3 || g.count(OutcomeFailed) != 1 || g.count(OutcomeBudgetSpent) != 1 {
		t.Fatalf("kills sent %d, failed told %d, budget-spent %d; want 3, 1 (told once a spell), 1", g.sd.kills, g.count(OutcomeFailed), g.count(OutcomeBudgetSpent))
	}
}

func TestMaintenanceStandsAside(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.maintenance = "DrainInProgress"
	g.hang("VersionHung")
	g.run(5 * time.Minute)
	if g.sd.kills != 0 || g.count(OutcomeStoodAside) != 1 || !strings.Contains(g.notes.got[0], "RepairStoodAside") ||
		!strings.Contains(g.notes.got[0], "DrainInProgress is True") {
		t.Fatalf("kills = %d, stood aside %d, events %q", g.sd.kills, g.count(OutcomeStoodAside), g.notes.got)
	}
	g.maintenance = ""
	g.run(21 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d a wait after the maintenance ended, want 1", g.sd.kills)
	}
}

func TestGuardsThatMakeRepairImpossibleOrRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		setup   func(g *rig)
		outcome string
		says    string
	}{
		{"uninterruptible leader", func(g *rig) { g.setState('D') }, OutcomeImpossible, "in uninterruptible sleep (D)"},
		{"uninterruptible thread", func(g *rig) { g.setThreads('S', 'D') }, OutcomeImpossible, fmt.Sprintf("thread %d1 of the main process", os.Getpid())},
		{"kernel deadlock", func(g *rig) {
			g.conds = append(g.conds, nodelink.Condition{Type: "KernelDeadlock", True: true, Reason: "TaskBlocked"})
		}, OutcomeImpossible, "KernelDeadlock is True"},
		{"no restart policy", func(g *rig) { g.sd.unit.Restart = "no" }, OutcomeRefused, "Restart=no, so systemd would not start it again"},
		{"restart prevented", func(g *rig) { g.sd.unit.KillKeepsItDown = "RestartPreventExitStatus=SIGKILL" }, OutcomeRefused,
			"RestartPreventExitStatus=SIGKILL, so systemd would not start it again"},
		{"wrapper unit", func(g *rig) { g.writeProc(1, "k3s", 'S', 'S'); g.sd.unit.MainPID = 1 }, OutcomeRefused,
			"is not the process listening on"},
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
			if g.count(c.outcome) != 1 || len(g.notes.got) < 1 || !strings.Contains(g.notes.got[0], c.says) {
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

// kubeletRig is a rig whose unit is the kubelet's, with its health port
// held in the fake /proc by pid, of unit holderUnit.
func kubeletRig(t *testing.T, pid int, holderUnit string) *rig {
	g := newRig(t, Settings{RestartKubeletAfter: 20 * time.Second, KubeletUnit: "kubelet.service"})
	g.sd.unit.Name = "kubelet.service"
	g.r.o.KubeletHealthzPort = 10248
	if err := os.MkdirAll(filepath.Join(g.proc, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:2808 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n"
	if err := os.WriteFile(filepath.Join(g.proc, "net", "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		g.writeProc(pid, "intruder", 'S', 'S')
	}
	fd := filepath.Join(g.proc, fmt.Sprint(pid), "fd")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[4242]", filepath.Join(fd, "7")); err != nil {
		t.Fatal(err)
	}
	g.sd.units = map[uint32]string{uint32(pid): holderUnit}
	return g
}

func TestKubeletRestartedOnlyWhenItsHealthPortGoesUnanswered(t *testing.T) {
	g := kubeletRig(t, os.Getpid(), "kubelet.service")
	g.run(time.Minute)
	g.conds = []nodelink.Condition{{Type: "KubeletUnresponsive", True: true, Reason: "NodeLeaseNotRenewed"}}
	g.silentSince = time.Time{}
	g.run(5 * time.Minute)
	if g.sd.kills != 0 {
		t.Fatalf("a Lease not renewed while the kubelet answers restarted it")
	}
	g.conds = []nodelink.Condition{{Type: "KubeletUnresponsive", True: true, Reason: ReasonKubeletSilent}}
	g.silentSince = g.clk.Now()
	g.run(20 * time.Second)
	if len(g.sd.killed) != 1 || g.sd.killed[0] != "kubelet.service" || !strings.HasPrefix(g.notes.got[0], "Normal KubeletRestarted") {
		t.Errorf("killed %q, events %q; want kubelet.service, KubeletRestarted", g.sd.killed, g.notes.got)
	}
}

// TestAKubeletHealthPortHeldByAnotherProcessIsRefused: a hostNetwork pod
// that took 10248 while the kubelet restarted is not the kubelet.
func TestAKubeletHealthPortHeldByAnotherProcessIsRefused(t *testing.T) {
	g := kubeletRig(t, 1, "cri-containerd-abc.scope")
	g.conds = []nodelink.Condition{{Type: "KubeletUnresponsive", True: true, Reason: ReasonKubeletSilent}}
	g.silentSince = g.clk.Now()
	g.run(time.Minute)
	if g.sd.kills != 0 || len(g.notes.got) != 1 || !strings.Contains(g.notes.got[0], `held by PID 1 (unit "cri-containerd-abc.scope"), not by kubelet.service`) {
		t.Fatalf("kills = %d, events %q", g.sd.kills, g.notes.got)
	}
}

func TestBudgetFileParse(t *testing.T) {
	boot, wall := Boot{ID: "b1", Since: 2 * time.Hour}, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for raw, want := range map[string]string{
		`{"version":3}`: "version 3, want 1 or 2",
		`{"version":2,"bootID":"b1","attempts":{"kubelet":[{"bootTimeNs":1}],"pods":[]}}`: `unknown target "pods"`,
		`{"version":1,"attempts":{"runtime":[{"bootTimeNs":1}]}}`:                         "version 1",
		`[]`: "not a repair state file",
	} {
		if _, err := parseBudget([]byte(raw), boot, wall); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseBudget(%s) = %v, want %q", raw, err, want)
		}
	}
	f, err := parseBudget([]byte(`{"version":2,"bootID":"b1","attempts":{"runtime":[{"bootTimeNs":5000000000,"dryRun":true}]}}`), boot, wall)
	if err != nil || len(f.Attempts[TargetRuntime]) != 1 || !f.Attempts[TargetRuntime][0].DryRun || f.Attempts[TargetRuntime][0].At != 5*time.Second {
		t.Errorf("parseBudget of a good file: %+v, %v", f, err)
	}
}

// TestBudgetV1FileIsMigrated: a wall-clock state file of an older
// hangwatch is read once more on the wall clock and placed on the boot
// clock: an attempt of the last hour keeps counting for the rest of its
// hour, one from before this boot or an hour ago does not, and one
// stamped in the future counts for a whole hour.
func TestBudgetV1FileIsMigrated(t *testing.T) {
	wall := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	boot := Boot{ID: "b1", Since: 30 * time.Minute}
	raw := fmt.Sprintf(`{"version":1,"attempts":{"runtime":[%q,%q,%q],"kubelet":[%q]}}`,
		wall.Add(-10*time.Minute).Format(time.RFC3339), wall.Add(-45*time.Minute).Format(time.RFC3339),
		wall.Add(-2*time.Hour).Format(time.RFC3339), wall.Add(time.Hour).Format(time.RFC3339))
	f, err := parseBudget([]byte(raw), boot, wall)
	if err != nil {
		t.Fatal(err)
	}
	if f.BootID != "b1" || fmt.Sprint(f.Attempts[TargetRuntime]) != "[{20m0s false}]" || fmt.Sprint(f.Attempts[TargetKubelet]) != "[{30m0s false}]" {
		t.Fatalf("migrated = %+v; want the runtime's attempt 10 min ago at 20m of this boot, the kubelet's future one at now", f)
	}
	path := filepath.Join(t.TempDir(), "budget.json")
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBudget(path, func() (Boot, error) { return boot, nil }, clocktesting.NewFakePassiveClock(wall))
	if err != nil || b.Used(TargetRuntime, boot) != 1 || b.Used(TargetRuntime, Boot{ID: "b1", Since: 80 * time.Minute}) != 0 {
		t.Fatalf("a migrated budget: %v, used %d", err, b.Used(TargetRuntime, boot))
	}
	if _, err := b.Record(TargetRuntime, boot, false); err != nil {
		t.Fatal(err)
	}
	if written, _ := os.ReadFile(path); !strings.Contains(string(written), `"version":2,"bootID":"b1"`) {
		t.Errorf("written again as %s, want version 2", written)
	}
}

func FuzzParseBudget(f *testing.F) {
	f.Add([]byte(`{"version":2,"bootID":"b","attempts":{"runtime":[{"bootTimeNs":1}]}}`))
	f.Add([]byte(`{"version":1,"attempts":{"runtime":["2026-01-01T00:00:00Z"]}}`))
	f.Fuzz(func(_ *testing.T, b []byte) {
		_, _ = parseBudget(b, Boot{ID: "b", Since: time.Hour}, time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC))
	})
}

func FuzzListeningInodes(f *testing.F) {
	f.Add([]byte("sl local\n   0: 0100007F:2808 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n"), 10248)
	f.Fuzz(func(_ *testing.T, b []byte, port int) { _ = listeningInodes(b, port) })
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

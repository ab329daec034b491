package repair

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowFleet is a fleet bound behind an API server that answers after
// slow on the fake clock (none: at once), or never: it steps the clock as
// the wait would, then waits for its context.
type slowFleet struct {
	g     *rig
	slow  time.Duration
	ok    bool
	why   string
	asked int
}

func (f *slowFleet) Acquire(ctx context.Context, _ Target, _ FleetSettings) (bool, string, error) {
	f.asked++
	if f.slow > 0 {
		f.g.clk.Step(f.slow)
		<-ctx.Done()
		return false, "", ctx.Err()
	}
	return f.ok, f.why, nil
}

// budgetUsed is what the state file says of the runtime's last hour now.
func (g *rig) budgetUsed() int {
	b, err := OpenBudget(g.settings.StateFile, func() (Boot, error) { return Boot{ID: g.bootID, Since: g.uptime}, nil }, g.clk)
	if err != nil {
		g.t.Fatal(err)
	}
	return b.Used(TargetRuntime, Boot{ID: g.bootID, Since: g.uptime})
}

func (g *rig) givenUp(want bool, says string) {
	g.t.Helper()
	up, why := g.r.GivenUp(TargetRuntime)
	if up != want || !strings.Contains(why, says) {
		g.t.Errorf("GivenUp = %v (%s); want %v, saying %q", up, why, want, says)
	}
}

// TestASlowAPIServerDoesNotStopTheKill: the maintenance read and the
// fleet ask each get no answer for 6 s (an API server under load); each
// gives up at its own deadline, and the kill, with a deadline of its own,
// is sent. Today's one 5-s context for all three sent no kill, spent a
// budget slot, and told the fence that repair had given up.
func TestASlowAPIServerDoesNotStopTheKill(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, Fleet: FleetSettings{MaxRestarts: 3, Window: time.Hour, Namespace: "ns"}})
	g.r.o.Maintenance = func(ctx context.Context) (string, error) {
		g.clk.Step(6 * time.Second)
		<-ctx.Done()
		return "", ctx.Err()
	}
	fleet := &slowFleet{g: g, slow: 6 * time.Second}
	g.r.o.Fleet = fleet
	g.run(time.Minute)
	g.hang("VersionHung")
	g.run(20 * time.Second)
	if g.sd.kills != 1 || g.count(OutcomeRestarted) != 1 || fleet.asked != 1 {
		t.Fatalf("kills = %d, restarted %d, fleet asked %d; want the kill sent after both reads timed out; events %q", g.sd.kills, g.count(OutcomeRestarted), fleet.asked, g.notes.got)
	}
	if used := g.budgetUsed(); used != 1 {
		t.Errorf("budget used %d, want 1", used)
	}
}

// TestAKillNeverSentIsNotCounted: a kill that never left (the repair
// process stops while it asks the API server, or its connection to
// systemd is gone) is not counted against the budget, and repair has not
// given up: the next attempt, once it can send, restarts.
func TestAKillNeverSentIsNotCounted(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	var stop context.CancelFunc
	g.r.o.Maintenance = func(context.Context) (string, error) {
		stop() // SIGTERM while the Node is read
		return "", nil
	}
	g.hang("VersionHung")
	for end := g.clk.Now().Add(10 * time.Minute); g.clk.Now().Before(end); {
		g.step(time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		stop = cancel
		g.r.Step(ctx)
		cancel()
	}
	if g.sd.kills != 0 || g.count(OutcomeBudgetSpent) != 0 || g.count(OutcomeFailed) != 0 {
		t.Fatalf("kills = %d, budget-spent %d, failed %d; want none: no kill was sent; events %q", g.sd.kills, g.count(OutcomeBudgetSpent), g.count(OutcomeFailed), g.notes.got)
	}
	if used := g.budgetUsed(); used != 0 {
		t.Errorf("budget used %d by kills never sent, want 0", used)
	}
	g.givenUp(false, "was never sent")
	g.r.o.Maintenance = func(context.Context) (string, error) { return "", nil }
	g.run(21 * time.Second)
	if g.sd.kills != 1 || g.budgetUsed() != 1 {
		t.Errorf("kills = %d, budget used %d once the kill could be sent; want 1, 1", g.sd.kills, g.budgetUsed())
	}
}

// TestAKillTheManagerNeverSentIsNotCounted: systemd's connection closed
// before the kill left.
func TestAKillTheManagerNeverSentIsNotCounted(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.sd.err = fmt.Errorf("kill the main process of containerd.service: %w: the connection to systemd is closed", ErrKillNotSent)
	g.hang("VersionHung")
	g.run(10 * time.Minute)
	if g.count(OutcomeRestarted) != 0 || g.count(OutcomeFailed) != 0 || g.count(OutcomeBudgetSpent) != 0 || g.budgetUsed() != 0 {
		t.Fatalf("restarted %d, failed %d, budget-spent %d, budget used %d; want none", g.count(OutcomeRestarted), g.count(OutcomeFailed), g.count(OutcomeBudgetSpent), g.budgetUsed())
	}
	g.givenUp(false, "the connection to systemd is closed")
}

// TestAKillModeThatKillsTheContainersIsRefused: a runtime unit with
// KillMode=control-group and its shims (or conmons) in its cgroup would
// lose every container on a restart: impossible, naming them. The same
// mode with the main process alone in the cgroup (CRI-O's conmons in
// scopes of their own) keeps them, and is restarted.
func TestAKillModeThatKillsTheContainersIsRefused(t *testing.T) {
	for _, mode := range []string{"control-group", "mixed", ""} {
		t.Run(or(mode, "unknown"), func(t *testing.T) {
			g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
			g.sd.unit.KillMode, g.sd.procs = mode, []uint32{4242, 4243}
			g.hang("VersionHung")
			g.run(5 * time.Minute)
			want := fmt.Sprintf("unit containerd.service has KillMode=%s (repair needs KillMode=process, or a cgroup holding the main process alone) and 2 other processes in its cgroup (PIDs 4242, 4243", or(mode, "unknown"))
			if g.sd.kills != 0 || g.count(OutcomeImpossible) != 1 || len(g.notes.got) != 1 ||
				!strings.Contains(g.notes.got[0], "Warning RepairImpossible") || !strings.Contains(g.notes.got[0], want) {
				t.Fatalf("kills = %d, impossible %d, events %q; want one RepairImpossible saying %q", g.sd.kills, g.count(OutcomeImpossible), g.notes.got, want)
			}
			g.givenUp(true, "KillMode="+or(mode, "unknown"))
		})
	}
	t.Run("control-group, the main process alone", func(t *testing.T) {
		g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
		g.sd.unit.KillMode = "control-group"
		g.hang("VersionHung")
		g.run(20 * time.Second)
		if g.sd.kills != 1 {
			t.Fatalf("kills = %d, events %q; want the restart of a unit whose cgroup holds its main process alone", g.sd.kills, g.notes.got)
		}
	})
}

// TestTheBudgetIsCountedByBoot: the wall clock stepped forward 2 hours
// (NTP after a long drift) does not give the budget back; stepped back a
// day, with hangwatch restarted, it does not hold it for a day; a new boot
// starts it afresh.
func TestTheBudgetIsCountedByBoot(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("VersionHung")
	g.run(10 * time.Minute)
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d, want the budget's 3", g.sd.kills)
	}
	g.clk.Step(2 * time.Hour) // the wall clock alone
	g.run(10 * time.Minute)
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d after the wall clock stepped 2 h forward; want 3: the boot clock moved 10 min", g.sd.kills)
	}
	g.clk.SetTime(g.clk.Now().Add(-24 * time.Hour))
	g.restartedAt(g.clk.Now().Add(-time.Hour)) // systemd's stamp, on the same wall clock
	g.r, g.silentSince = g.newRepairer(), g.clk.Now()
	g.run(39 * time.Minute)
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d 59 min of boot time after the first kill; want 3", g.sd.kills)
	}
	g.run(2 * time.Minute) // past an hour of boot time since the kills
	if g.sd.kills < 4 {
		t.Fatalf("kills = %d after the wall clock stepped a day back; want the budget back an hour after the kills on the boot clock", g.sd.kills)
	}
	g.run(2 * time.Minute)
	kills := g.sd.kills
	if used := g.budgetUsed(); used != 3 {
		t.Fatalf("budget used %d before the reboot, want it spent (3)", used)
	}
	g.bootID, g.uptime = "boot-2", 2*time.Minute // the node rebooted
	g.r, g.silentSince = g.newRepairer(), g.clk.Now()
	g.run(21 * time.Second)
	if g.sd.kills != kills+1 {
		t.Fatalf("kills = %d in a new boot; want %d: a new boot's budget is fresh", g.sd.kills, kills+1)
	}
}

// TestRepairHasNotGivenUpWhileHeldBack: held by the fleet's bound, by a
// budget it cannot read, or before any restart, repair has not tried, and
// the fence must wait.
func TestRepairHasNotGivenUpWhileHeldBack(t *testing.T) {
	t.Run("the fleet bound", func(t *testing.T) {
		g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, Fleet: FleetSettings{MaxRestarts: 1, Window: time.Hour, Namespace: "ns"}})
		g.r.o.Fleet = &slowFleet{g: g, why: "the fleet made repair.fleet.maxRestarts (1) restarts in the last 1h0m0s"}
		g.hang("VersionHung")
		g.givenUp(false, "none")
		g.run(10 * time.Minute)
		if g.sd.kills != 0 || g.count(OutcomeFleetBound) != 1 {
			t.Fatalf("kills = %d, fleet-bound %d", g.sd.kills, g.count(OutcomeFleetBound))
		}
		g.givenUp(false, "the fleet made repair.fleet.maxRestarts (1) restarts")
	})
	t.Run("an unreadable budget", func(t *testing.T) {
		path := filepath.Join(shortTempDir(t), "budget.json")
		if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, StateFile: path})
		g.hang("VersionHung")
		g.run(10 * time.Minute)
		g.givenUp(false, "its restart budget cannot be kept")
	})
	t.Run("a boot clock that cannot be read", func(t *testing.T) {
		g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
		g.r.o.Boot = func() (Boot, error) { return Boot{}, fmt.Errorf("boot ID: %w", os.ErrPermission) }
		g.hang("VersionHung")
		g.run(10 * time.Minute)
		if g.sd.kills != 0 {
			t.Fatalf("kills = %d without a boot clock to count the budget on", g.sd.kills)
		}
		g.givenUp(false, "the budget is counted by boot")
	})
	t.Run("dry run", func(t *testing.T) {
		g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, DryRun: true})
		g.hang("VersionHung")
		g.run(10 * time.Minute)
		g.givenUp(false, "dry run")
		s := g.r.settings
		s.DryRun = false // the dry runs spent the budget, no kill did
		g.r.Update(s)
		g.run(5 * time.Minute)
		if g.sd.kills != 0 || g.count(OutcomeBudgetSpent) != 1 {
			t.Fatalf("kills = %d, budget-spent %d", g.sd.kills, g.count(OutcomeBudgetSpent))
		}
		g.givenUp(false, "dry runs included")
	})
}

// TestRepairGivesUpOnlyWhenItTriedOrCannot: after a restart it has not
// given up until the runtime has stayed silent a wait; then it has, for
// the rest of the spell, through the next restart; a budget spent by
// kills, repair off, or a node where a restart is impossible give up too.
func TestRepairGivesUpOnlyWhenItTriedOrCannot(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.hang("VersionHung")
	g.run(20 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d", g.sd.kills)
	}
	g.givenUp(false, "it is given 20s to answer")
	g.run(19 * time.Second)
	g.givenUp(false, "it is given 20s to answer")
	g.run(time.Second)
	g.givenUp(true, "repair restarted the runtime 20s ago in this spell and it has given no answer since")
	g.run(3 * time.Minute) // the next restarts, then the budget
	if g.sd.kills != 3 {
		t.Fatalf("kills = %d", g.sd.kills)
	}
	g.givenUp(true, "repair restarted the runtime")
	g.silentSince = time.Time{} // it answers: the spell is over
	g.run(time.Second)
	g.givenUp(false, "none")
	g.hang("VersionHung")
	g.run(21 * time.Second)
	g.givenUp(true, "it was restarted 3 times in the last hour of this boot")
	s := g.r.settings
	s.Enabled = false
	g.r.Update(s)
	g.givenUp(true, "repair is off")
	off := newRig(t, Settings{})
	off.r.Update(Settings{})
	off.givenUp(true, "repair is off")
}

// TestANodeWhereRepairCannotRestartGivesUp: the node's setup makes a
// restart impossible (no such unit, systemd would not start it again):
// given up at the first attempt; a systemd that does not answer is not.
func TestANodeWhereRepairCannotRestartGivesUp(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	g.sd.unit.Restart = "no"
	g.hang("VersionHung")
	g.run(20 * time.Second)
	g.givenUp(true, "Restart=no")
	h := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second})
	h.r.o.Dial = func(context.Context, string) (Manager, error) {
		return nil, fmt.Errorf("systemd's D-Bus API: %w", context.DeadlineExceeded)
	}
	h.hang("VersionHung")
	h.run(time.Minute)
	h.givenUp(false, "context deadline exceeded")
}

// TestARestartThatNeverListensAgainIsGivenUp: repair restarts a hung
// runtime, and the new one never listens (its start wedges before it
// serves: RuntimeUnreachable). It is not killed again, the spell goes on,
// and repair gives up a wait after the kill, so the fence may act. The
// issue 49 installs suite found the spell ending at RuntimeUnreachable,
// and the fence never asked.
func TestARestartThatNeverListensAgainIsGivenUp(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, MaxRestartsPerHour: 3})
	g.run(time.Minute)
	g.hang("VersionHung")
	g.run(21 * time.Second)
	if g.sd.kills != 1 {
		t.Fatalf("kills = %d, want 1", g.sd.kills)
	}
	g.silentSince = time.Time{} // each call refused at once: an answer to the silence,
	g.run(2 * time.Second)      // while RuntimeHung still says VersionHung,
	g.conds = nil               // then one cycle judged responsive as the killed runtime's calls ended
	g.run(2 * time.Second)
	g.hang("RuntimeUnreachable")
	g.silentSince = time.Time{}
	g.run(3 * time.Second)
	g.givenUp(false, "given 20s to answer")
	g.run(20 * time.Second)
	g.givenUp(true, "has given no answer since")
	g.run(2 * time.Minute)
	if g.sd.kills != 1 {
		t.Errorf("kills = %d while nothing listens, want the one restart", g.sd.kills)
	}
}

// TestARestartThatCuresEndsTheSpell: the restarted runtime answers and
// RuntimeHung turns False: the spell is over, repair has not given up.
func TestARestartThatCuresEndsTheSpell(t *testing.T) {
	g := newRig(t, Settings{RestartRuntimeAfter: 20 * time.Second, MaxRestartsPerHour: 3})
	g.run(time.Minute)
	g.hang("VersionHung")
	g.run(21 * time.Second)
	g.silentSince = time.Time{}
	g.run(3 * time.Second)
	g.conds = nil
	g.run(30 * time.Second)
	g.givenUp(false, "has not restarted")
	if g.sd.kills != 1 {
		t.Errorf("kills = %d, want 1", g.sd.kills)
	}
}

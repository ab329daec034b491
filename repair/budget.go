package repair

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/atomicfile"
)

// budgetVersion is the state file's format: 2 counts attempts by boot
// (boot ID and CLOCK_BOOTTIME); 1 stamped them on the wall clock, and is
// still read (migrated: see migrateV1).
const budgetVersion = 2

// budgetFile is the state file as written: each target's attempts (a
// kill sent, or a dry run) in the last hour of this boot, on the node's
// boot clock, so no step of the wall clock resets or extends the budget.
type budgetFile struct {
	Version  int                      `json:"version"`
	BootID   string                   `json:"bootID"`
	Attempts map[Target][]budgetEntry `json:"attempts"`
}

// budgetEntry is one attempt: when, in CLOCK_BOOTTIME of the file's boot,
// and whether it was a dry run (no kill made).
type budgetEntry struct {
	At     time.Duration `json:"bootTimeNs"`
	DryRun bool          `json:"dryRun,omitempty"`
}

// budgetFileV1 is the format of hangwatch before the budget was counted by
// boot: wall-clock stamps.
type budgetFileV1 struct {
	Version  int                    `json:"version"`
	Attempts map[Target][]time.Time `json:"attempts"`
}

// Budget keeps each target's attempts of the last hour in a file on the
// node (a hostPath), so a hangwatch that crashes, is OOM-killed or rolled
// out comes back knowing them: any number of hangwatch restarts in an hour
// still gives at most maxRestartsPerHour kills. An attempt is written
// before its kill is sent, and taken out again when the kill was never
// sent. The hour is counted on the boot clock (Boot): a new boot starts a
// fresh budget, and a step of the wall clock changes nothing. With no
// path, attempts live in memory only (tests, and `hangwatch diag`).
type Budget struct {
	path     string
	boot     BootClock
	wall     clock.PassiveClock // the v1 file's migration only
	bootID   string
	attempts map[Target][]budgetEntry
}

// OpenBudget reads the state file at path, or starts empty when it does
// not exist yet or was written in another boot. A file that cannot be
// read or parsed, or a boot clock that cannot be read, is an error: repair
// then refuses to act rather than forget its budget, until Refresh reads
// it (or finds it removed). The Budget returned is usable either way. A
// nil boot is HostBoot; a nil wall, the real clock.
func OpenBudget(path string, boot BootClock, wall clock.PassiveClock) (*Budget, error) {
	if boot == nil {
		boot = HostBoot
	}
	if wall == nil {
		wall = clock.RealClock{}
	}
	b := &Budget{path: path, boot: boot, wall: wall, attempts: map[Target][]budgetEntry{}}
	return b, b.Refresh()
}

// Refresh reads the boot clock and the file again: the file is the
// budget, so two hangwatch processes on one node (a rollout's surge) see
// each other's attempts, and a file an operator removed starts it afresh.
// An error: the boot or the file cannot be read, and the budget is as it
// was.
func (b *Budget) Refresh() error {
	now, err := b.boot()
	if err != nil {
		return fmt.Errorf("repair.stateFile %s: the budget is counted by boot: %w", b.path, err)
	}
	fresh, err := readBudget(b.path, now, b.wall.Now())
	if err != nil {
		return err
	}
	b.bootID, b.attempts = now.ID, fresh
	return nil
}

// readBudget reads the attempts of boot now in the file at path; none
// when there is no path or no file, or the file is another boot's.
func readBudget(path string, now Boot, wall time.Time) (map[Target][]budgetEntry, error) {
	if path == "" {
		return map[Target][]budgetEntry{}, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[Target][]budgetEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("repair.stateFile %s: %w", path, err)
	}
	f, err := parseBudget(raw, now, wall)
	if err != nil {
		return nil, fmt.Errorf("repair.stateFile %s: %w (remove it to start the budget afresh)", path, err)
	}
	if f.BootID != now.ID {
		return map[Target][]budgetEntry{}, nil // a new boot: a fresh budget
	}
	return f.Attempts, nil
}

// parseBudget reads the state file's content, either version; a version
// 1 file is migrated to boot now, at wall time wall.
func parseBudget(raw []byte, now Boot, wall time.Time) (budgetFile, error) {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return budgetFile{}, fmt.Errorf("not a repair state file: %w", err)
	}
	var f budgetFile
	switch probe.Version {
	case 1:
		var old budgetFileV1
		if err := json.Unmarshal(raw, &old); err != nil {
			return f, fmt.Errorf("version 1: %w", err)
		}
		f = migrateV1(old, now, wall)
	case budgetVersion:
		if err := json.Unmarshal(raw, &f); err != nil {
			return f, fmt.Errorf("version %d: %w", budgetVersion, err)
		}
	default:
		return f, fmt.Errorf("version %d, want 1 or %d", probe.Version, budgetVersion)
	}
	for t := range f.Attempts {
		if t != TargetRuntime && t != TargetKubelet {
			return f, fmt.Errorf("attempts: unknown target %q (want runtime or kubelet)", t)
		}
	}
	if f.Attempts == nil {
		f.Attempts = map[Target][]budgetEntry{}
	}
	return f, nil
}

// migrateV1 reads a wall-clock file once more on the wall clock, the
// last time it is trusted: an attempt of the last hour is placed as long
// before now on the boot clock (one stamped in the future counts from
// now, a whole hour), and one from before this boot is dropped, as a new
// boot's budget starts fresh.
func migrateV1(old budgetFileV1, now Boot, wall time.Time) budgetFile {
	f := budgetFile{Version: budgetVersion, BootID: now.ID, Attempts: map[Target][]budgetEntry{}}
	for t, ats := range old.Attempts {
		f.Attempts[t] = []budgetEntry{}
		for _, at := range ats {
			age := max(wall.Sub(at), 0)
			if age >= time.Hour || age > now.Since {
				continue
			}
			f.Attempts[t] = append(f.Attempts[t], budgetEntry{At: now.Since - age})
		}
	}
	return f
}

// Used is how many attempts on t the last hour of boot now holds. One
// stamped after now (a file copied from elsewhere) still counts.
func (b *Budget) Used(t Target, now Boot) int {
	return b.count(t, now, true)
}

// Kills is how many of Used were kills sent, not dry runs.
func (b *Budget) Kills(t Target, now Boot) int {
	return b.count(t, now, false)
}

func (b *Budget) count(t Target, now Boot, dryRuns bool) int {
	if now.ID != b.bootID {
		return 0
	}
	n := 0
	for _, e := range b.attempts[t] {
		if now.Since-e.At < time.Hour && (dryRuns || !e.DryRun) {
			n++
		}
	}
	return n
}

// Record adds an attempt on t at now to the file as it is now, forgets
// those older than an hour, and writes it (atomically: a new file renamed
// over the old), holding the file's lock against another hangwatch on the
// node. The attempt counts in memory even when the write fails. It
// returns the entry, for Forget.
func (b *Budget) Record(t Target, now Boot, dryRun bool) (budgetEntry, error) {
	e := budgetEntry{At: now.Since, DryRun: dryRun}
	return e, b.rewrite(func() {
		if b.bootID != now.ID {
			b.bootID, b.attempts = now.ID, map[Target][]budgetEntry{}
		}
		for k, es := range b.attempts {
			b.attempts[k] = slices.DeleteFunc(es, func(e budgetEntry) bool { return now.Since-e.At >= time.Hour })
		}
		b.attempts[t] = append(b.attempts[t], e)
	})
}

// Forget takes out an attempt Record added whose kill was never sent.
func (b *Budget) Forget(t Target, e budgetEntry) error {
	return b.rewrite(func() {
		if i := slices.Index(b.attempts[t], e); i >= 0 {
			b.attempts[t] = slices.Delete(b.attempts[t], i, i+1)
		}
	})
}

// rewrite applies change to the file as it is now, under its lock, and
// writes it; with no path, or when the file cannot be read, change
// applies in memory only.
func (b *Budget) rewrite(change func()) error {
	if b.path == "" {
		change()
		return nil
	}
	unlock, err := lockFile(b.path + ".lock")
	if err != nil {
		change()
		return fmt.Errorf("repair.stateFile %s: %w", b.path, err)
	}
	defer unlock()
	if err := b.Refresh(); err != nil {
		change()
		return err
	}
	change()
	raw, err := json.Marshal(budgetFile{Version: budgetVersion, BootID: b.bootID, Attempts: b.attempts})
	if err != nil {
		return fmt.Errorf("repair.stateFile %s: %w", b.path, err)
	}
	if err := atomicfile.Write(b.path, raw); err != nil {
		return fmt.Errorf("repair.stateFile %s: %w", b.path, err)
	}
	return nil
}

// lockFile takes an exclusive flock on path, made if need be.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

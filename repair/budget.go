package repair

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// budgetVersion is the state file's format.
const budgetVersion = 1

// budgetFile is the state file as written: each target's attempts (a
// kill sent, or a dry run) in the last hour, on the node's clock.
type budgetFile struct {
	Version  int                    `json:"version"`
	Attempts map[Target][]time.Time `json:"attempts"`
}

// Budget keeps each target's attempts of the last hour in a file on the
// node (a hostPath), so a hangwatch that crashes, is OOM-killed or rolled
// out comes back knowing them: any number of hangwatch restarts in an hour
// still gives at most maxRestartsPerHour kills. An attempt is written
// before its kill is sent. With no path, attempts live in memory only
// (tests, and `hangwatch diag`).
type Budget struct {
	path     string
	attempts map[Target][]time.Time
}

// OpenBudget reads the state file at path, or starts empty when it does
// not exist yet. A file that cannot be read or parsed is an error: repair
// then refuses to act rather than forget its budget, until Refresh reads
// it (or finds it removed). The Budget returned is usable either way.
func OpenBudget(path string) (*Budget, error) {
	b := &Budget{path: path, attempts: map[Target][]time.Time{}}
	attempts, err := readBudget(path)
	if err == nil {
		b.attempts = attempts
	}
	return b, err
}

// readBudget reads the attempts in the file at path; none when there is
// no path or no file.
func readBudget(path string) (map[Target][]time.Time, error) {
	if path == "" {
		return map[Target][]time.Time{}, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[Target][]time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("repair.stateFile %s: %w", path, err)
	}
	f, err := parseBudget(raw)
	if err != nil {
		return nil, fmt.Errorf("repair.stateFile %s: %w (remove it to start the budget afresh)", path, err)
	}
	return f.Attempts, nil
}

// parseBudget reads the state file's content.
func parseBudget(raw []byte) (budgetFile, error) {
	var f budgetFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("not a repair state file: %w", err)
	}
	if f.Version != budgetVersion {
		return f, fmt.Errorf("version %d, want %d", f.Version, budgetVersion)
	}
	for t := range f.Attempts {
		if t != TargetRuntime && t != TargetKubelet {
			return f, fmt.Errorf("attempts: unknown target %q (want runtime or kubelet)", t)
		}
	}
	if f.Attempts == nil {
		f.Attempts = map[Target][]time.Time{}
	}
	return f, nil
}

// Refresh reads the file again: the file is the budget, so two hangwatch
// processes on one node (a rollout's surge) see each other's attempts,
// and a file an operator removed starts it afresh. An error: the file
// cannot be read, and the budget is as it was.
func (b *Budget) Refresh() error {
	if b.path == "" {
		return nil
	}
	fresh, err := readBudget(b.path)
	if err != nil {
		return err
	}
	b.attempts = fresh
	return nil
}

// Used is how many attempts on t the last hour holds at now. One stamped
// after now (the clock stepped back) still counts.
func (b *Budget) Used(t Target, now time.Time) int {
	n := 0
	for _, at := range b.attempts[t] {
		if now.Sub(at) < time.Hour {
			n++
		}
	}
	return n
}

// Record adds an attempt on t at now to the file as it is now, forgets
// those older than an hour, and writes it (atomically: a new file renamed
// over the old), holding the file's lock against another hangwatch on the
// node. The attempt counts in memory even when the write fails.
func (b *Budget) Record(t Target, now time.Time) error {
	if b.path != "" {
		unlock, err := lockFile(b.path + ".lock")
		if err != nil {
			b.attempts[t] = append(b.attempts[t], now)
			return fmt.Errorf("repair.stateFile %s: %w", b.path, err)
		}
		defer unlock()
		if err := b.Refresh(); err != nil {
			b.attempts[t] = append(b.attempts[t], now)
			return err
		}
	}
	for k, ats := range b.attempts {
		b.attempts[k] = slices.DeleteFunc(ats, func(at time.Time) bool { return now.Sub(at) >= time.Hour })
	}
	b.attempts[t] = append(b.attempts[t], now)
	if b.path == "" {
		return nil
	}
	raw, err := json.Marshal(budgetFile{Version: budgetVersion, Attempts: b.attempts})
	if err != nil {
		return fmt.Errorf("repair.stateFile %s: %w", b.path, err)
	}
	if err := writeFileAtomic(b.path, raw); err != nil {
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

// writeFileAtomic writes raw to a temp file beside path, syncs it, and
// renames it over path.
func writeFileAtomic(path string, raw []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".repair-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

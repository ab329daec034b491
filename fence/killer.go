package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// defaultPoll is Killer.Poll's default.
const defaultPoll = 20 * time.Millisecond

// Killer stops every process of one pod cgroup (the dir and all its
// descendants).
type Killer struct {
	H Hierarchy
	// Proc is the proc file system's root, "/proc".
	Proc string
	// Signal sends a signal to a pid; nil: unix.Kill.
	Signal func(pid int, sig unix.Signal) error
	// Poll is the interval between checks; 0: 20ms.
	Poll time.Duration

	// afterWrite, when set (by tests), is called after each cgroup file
	// write, so that a fake tree can act as the kernel would.
	afterWrite func(path string)
}

// Kill stops every process in dir's cgroup subtree and returns when the
// subtree has no process left, or ctx ends (then an error saying how many
// remain and which pids; it wraps ErrImpossible when ctx's deadline passed).
//
// Before anything is frozen or signalled, it reads the state of every task
// (every pid in every cgroup.procs of the subtree, and their threads where
// Proc/<pid>/task exists) and if one is in uninterruptible sleep (D) it
// returns an error wrapping ErrImpossible, naming the pid and its comm,
// having done nothing.
//
// v1: freeze (freezer.state FROZEN), SIGKILL every pid of the subtree, thaw
// (THAWED) so the kills are delivered. v2: freeze (cgroup.freeze 1, wait for
// "frozen 1" in cgroup.events), write 1 to cgroup.kill where it exists or
// else SIGKILL every pid, thaw (cgroup.freeze 0). A cgroup that does not
// freeze before ctx ends is thawed and reported. Then it polls until the
// subtree is empty (v2: cgroup.events "populated 0"), sending SIGKILL again to
// any pid still listed. dir itself missing at the start is an error wrapping
// fs.ErrNotExist; dir removed later counts as empty.
//
// It returns the pids it killed (for the report), sorted.
func (k Killer) Kill(ctx context.Context, dir string) (killed []int, err error) {
	pids, err := subtreePids(dir)
	if err != nil {
		return nil, fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	if err := k.refuseUninterruptible(dir, pids); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	log := &killLog{seen: map[int]bool{}}
	if k.H.V2 {
		err = k.killV2(ctx, dir, log)
	} else {
		err = k.killV1(ctx, dir, log)
	}
	if err == nil {
		err = k.waitEmpty(ctx, dir, log)
	}
	slices.Sort(log.pids)
	klog.V(2).InfoS("Fence kill", "cgroup", dir, "killed", log.pids, "err", err)
	return log.pids, err
}

// refuseUninterruptible returns an error wrapping ErrImpossible if a task of
// pids is in D state.
func (k Killer) refuseUninterruptible(dir string, pids []int) error {
	for _, pid := range pids {
		who, err := uninterruptible(k.Proc, pid)
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", dir, err)
		}
		if who != "" {
			return fmt.Errorf("kill cgroup %s: %s is in uninterruptible sleep (state D), which SIGKILL cannot end: %w",
				dir, who, ErrImpossible)
		}
	}
	return nil
}

// killLog records the pids signalled, each once.
type killLog struct {
	pids []int
	seen map[int]bool
}

func (l *killLog) add(pid int) {
	if !l.seen[pid] {
		l.seen[pid] = true
		l.pids = append(l.pids, pid)
	}
}

// sigkill sends SIGKILL to each pid; a pid already gone (ESRCH) is skipped.
func (k Killer) sigkill(pids []int, log *killLog) error {
	signal := k.Signal
	if signal == nil {
		signal = unix.Kill
	}
	for _, pid := range pids {
		err := signal(pid, unix.SIGKILL)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return fmt.Errorf("SIGKILL pid %d: %w", pid, err)
		}
		log.add(pid)
	}
	return nil
}

// write writes a cgroup file, then lets a test's fake kernel react.
func (k Killer) write(path, value string) error {
	err := writeFile(path, value)
	if err == nil && k.afterWrite != nil {
		k.afterWrite(path)
	}
	return err
}

// poll calls cond now and then every Poll until it is done or fails, or ctx
// ends (then it returns ctx.Err() itself).
func (k Killer) poll(ctx context.Context, cond func() (bool, error)) error {
	interval := k.Poll
	if interval <= 0 {
		interval = defaultPoll
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

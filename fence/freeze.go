package fence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
)

// killV1 freezes dir with the v1 freezer, SIGKILLs every pid of its subtree
// and thaws it so that the kills are delivered.
func (k Killer) killV1(ctx context.Context, dir string, log *killLog) error {
	state := filepath.Join(dir, "freezer.state")
	if err := k.write(state, "FROZEN"); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", dir, err)
	}
	last := ""
	err := k.poll(ctx, func() (bool, error) {
		s, err := readTrimmed(state)
		last = s
		return s == "FROZEN", err
	})
	if err != nil {
		k.thaw(state, "THAWED")
		return k.freezeFailed(ctx, dir, err, "freezer.state "+last)
	}
	err = k.killFrozen(dir, log)
	if terr := k.write(state, "THAWED"); err == nil && terr != nil {
		err = fmt.Errorf("thaw cgroup %s: %w", dir, terr)
	}
	return err
}

// killV2 freezes dir with cgroup.freeze, kills its subtree with cgroup.kill
// (or SIGKILL where the kernel has no cgroup.kill) and thaws it.
func (k Killer) killV2(ctx context.Context, dir string, log *killLog) error {
	freeze := filepath.Join(dir, "cgroup.freeze")
	events := filepath.Join(dir, "cgroup.events")
	if err := k.write(freeze, "1"); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", dir, err)
	}
	last := ""
	err := k.poll(ctx, func() (bool, error) {
		v, err := eventValue(events, "frozen")
		last = v
		return v == "1", err
	})
	if err != nil {
		k.thaw(freeze, "0")
		return k.freezeFailed(ctx, dir, err, "cgroup.events frozen "+last)
	}
	err = k.killFrozenV2(dir, log)
	if terr := k.write(freeze, "0"); err == nil && terr != nil {
		err = fmt.Errorf("thaw cgroup %s: %w", dir, terr)
	}
	return err
}

// killFrozenV2 writes cgroup.kill where it exists, else SIGKILLs every pid.
func (k Killer) killFrozenV2(dir string, log *killLog) error {
	killFile := filepath.Join(dir, "cgroup.kill")
	_, err := os.Stat(killFile)
	if errors.Is(err, fs.ErrNotExist) {
		return k.killFrozen(dir, log)
	}
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	pids, err := subtreePids(dir)
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	if err := k.write(killFile, "1"); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	for _, pid := range pids {
		log.add(pid)
	}
	return nil
}

// killFrozen SIGKILLs every pid of the frozen subtree.
func (k Killer) killFrozen(dir string, log *killLog) error {
	pids, err := subtreePids(dir)
	if err == nil {
		err = k.sigkill(pids, log)
	}
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	return nil
}

// thaw undoes a freeze that failed; its own failure can only be logged.
func (k Killer) thaw(path, value string) {
	if err := k.write(path, value); err != nil {
		klog.ErrorS(err, "Fence could not thaw a cgroup it froze", "file", path)
	}
}

// freezeFailed explains why dir did not freeze: err from polling, or ctx
// ending while the cgroup was still at state.
func (k Killer) freezeFailed(ctx context.Context, dir string, err error, state string) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("freeze cgroup %s: %w", dir, err)
	}
	pids, _ := subtreePids(dir)
	return ctxFailure(ctx, fmt.Sprintf("cgroup %s did not freeze (%s; processes %s); thawed it",
		dir, state, describePids(k.Proc, pids)))
}

// waitEmpty polls until dir's subtree has no process (v2: and cgroup.events
// says "populated 0"), sending SIGKILL again to any pid still listed.
func (k Killer) waitEmpty(ctx context.Context, dir string, log *killLog) error {
	var left []int
	err := k.poll(ctx, func() (bool, error) {
		var err error
		left, err = subtreePids(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil // removed, so empty
		}
		if err != nil {
			return false, err
		}
		if len(left) > 0 {
			return false, k.sigkill(left, log)
		}
		if !k.H.V2 {
			return true, nil
		}
		v, err := eventValue(filepath.Join(dir, "cgroup.events"), "populated")
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		return v == "0", err
	})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("empty cgroup %s: %w", dir, err)
	}
	if len(left) == 0 {
		return ctxFailure(ctx, fmt.Sprintf("cgroup %s is still populated though its cgroup.procs list no process", dir))
	}
	return ctxFailure(ctx, fmt.Sprintf("cgroup %s is not empty: %d processes remain: %s",
		dir, len(left), describePids(k.Proc, left)))
}

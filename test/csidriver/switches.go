package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc/status"
)

// Switches a test turns on by creating a file in <data-dir>/.switches/,
// and off by removing it; every node instance of the data directory reads
// them at each call.
const (
	// SwitchStageTmpfs makes NodeStageVolume mount a tmpfs of its own on
	// the staging path instead of bind-mounting the volume's folder: a file
	// system with a device of its own, as a real disk's is (a bind of the
	// shared folder shows the device of this machine's own disk, which the
	// fence counts as node-shared). The volume's data then stays on the
	// node.
	SwitchStageTmpfs = "stage-tmpfs"
	// SwitchHangPrefix + a method's name ("hang-NodeUnpublishVolume")
	// makes that method wait, doing nothing, while the file is there or
	// until its caller gives up (its deadline or cancellation).
	SwitchHangPrefix = "hang-"
)

// switchedOn says whether the switch's file is in the data directory.
func (d *driver) switchedOn(name string) bool {
	_, err := os.Stat(filepath.Join(d.volumes, ".switches", name))
	return err == nil
}

// hangWhileSwitched waits while the hang switch of method is on; it
// returns the caller's end as a gRPC status, or nil once the switch is off.
func (d *driver) hangWhileSwitched(ctx context.Context, method string) error {
	for d.switchedOn(SwitchHangPrefix + method) {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// mountTmpfs mounts a new tmpfs on target (made if missing); nothing when
// target is a mount point already.
func mountTmpfs(target string) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	if err := syscall.Mount("hwcsi", target, "tmpfs", 0, "size=16m"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", target, err)
	}
	return nil
}

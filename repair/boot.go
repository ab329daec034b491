package repair

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Boot is where the node is in its current boot: the kernel's boot ID and
// the time since it booted (CLOCK_BOOTTIME: it counts suspend, and no
// step of the wall clock moves it). The budget is counted on it.
type Boot struct {
	ID    string
	Since time.Duration
}

// BootClock reads the node's Boot.
type BootClock func() (Boot, error)

// bootIDPath is the kernel's ID of this boot, new at each boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// HostBoot reads the boot ID from /proc and the time since boot from
// CLOCK_BOOTTIME. The boot ID is the host's whatever the PID namespace; a
// container shares the host's kernel clocks unless it has a time
// namespace, which hangwatch's manifests do not give it.
func HostBoot() (Boot, error) {
	raw, err := os.ReadFile(bootIDPath)
	if err != nil {
		return Boot{}, fmt.Errorf("boot ID: %w", err)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" {
		return Boot{}, fmt.Errorf("boot ID %s: empty", bootIDPath)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return Boot{}, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	return Boot{ID: id, Since: time.Duration(ts.Nano())}, nil
}

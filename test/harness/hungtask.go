package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

const (
	hungTaskTimeoutFile  = "/proc/sys/kernel/hung_task_timeout_secs"
	hungTaskWarningsFile = "/proc/sys/kernel/hung_task_warnings"
	hungTaskPanicFile    = "/proc/sys/kernel/hung_task_panic"
)

// SetHungTaskTimeout sets the kernel's hung task timeout to secs, so that
// a task in D longer than that is reported ("INFO: task mkdir:N blocked for
// more than 3 seconds.") in the kernel log. If hung_task_warnings has
// counted down to 0 it is set to 10, or nothing would be reported. restore
// puts both back as they were. It refuses when hung_task_panic is set:
// a reported task would panic the machine.
func SetHungTaskTimeout(secs int) (restore func(), err error) {
	if panics, err := readSysctl(hungTaskPanicFile); err == nil && panics != "0" {
		return nil, fmt.Errorf("kernel.hung_task_panic is %s: a hung task would panic the machine", panics)
	}
	oldTimeout, err := readSysctl(hungTaskTimeoutFile)
	if err != nil {
		return nil, err
	}
	oldWarnings, err := readSysctl(hungTaskWarningsFile)
	if err != nil {
		return nil, err
	}
	restore = func() {
		_ = writeSysctl(hungTaskTimeoutFile, oldTimeout)
		_ = writeSysctl(hungTaskWarningsFile, oldWarnings)
	}
	if oldWarnings == "0" {
		if err := writeSysctl(hungTaskWarningsFile, "10"); err != nil {
			return nil, err
		}
	}
	if err := writeSysctl(hungTaskTimeoutFile, strconv.Itoa(secs)); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// readSysctl reads a /proc/sys file's value, trimmed.
func readSysctl(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// writeSysctl writes value to a /proc/sys file.
func writeSysctl(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

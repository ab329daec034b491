package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ProcState reads the state letter of process pid from /proc/PID/stat: R,
// S, D, Z, T... The comm field before it is in parentheses and may itself
// hold spaces and parentheses, so the state is read after the last ')'.
func ProcState(pid int) (byte, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("state of process %d: %w", pid, err)
	}
	return parseProcState(data)
}

// parseProcState finds the state letter in the text of a /proc/PID/stat.
func parseProcState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, fmt.Errorf("no state in /proc stat %q", stat)
	}
	return stat[i+2], nil
}

// WaitProcState polls pid's state until it is want, returning an error when
// the process is gone or ctx ends first.
func WaitProcState(ctx context.Context, pid int, want byte) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		state, err := ProcState(pid)
		if err != nil {
			return err
		}
		if state == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d in state %c, not %c: %w", pid, state, want, ctx.Err())
		case <-tick.C:
		}
	}
}

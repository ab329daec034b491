package repair

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// errKillMode is a unit whose restart would kill more than its main
// process: a container's shim or conmon in the unit's cgroup, and with it
// the container.
var errKillMode = errors.New("a restart would kill the unit's other processes")

// maxNamed is how many other processes a refusal names.
const maxNamed = 5

// keepsTheRest checks that a restart after the main process's SIGKILL
// kills nothing else of the unit. Once the main process is gone, systemd
// kills what is left of the unit by its KillMode= before it starts it
// again:
//   - process (containerd's shipped unit), none: nothing but the main
//     process, which repair has killed itself; every shim and container
//     runs on;
//   - control-group (the default; CRI-O's shipped unit), mixed: every
//     process left in the unit's cgroup and below. That is safe only
//     where the cgroup holds the main process alone, as crio.service does
//     under CRI-O's default systemd cgroup manager (each conmon in a
//     crio-conmon-<id>.scope of its own); under its cgroupfs manager, or
//     a containerd unit without KillMode=process, the conmons and shims
//     are there, and every container would be lost (docs/remediation.md,
//     "CRI-O nodes").
//
// A refusal (errKillMode) makes repair impossible on this node until the
// unit is changed.
func keepsTheRest(ctx context.Context, m Manager, u Unit) error {
	if u.KillMode == "process" || u.KillMode == "none" {
		return nil
	}
	pids, err := m.Processes(ctx, u.Name)
	if err != nil {
		return fmt.Errorf("unit %s has KillMode=%s, and its processes cannot be listed to show a restart keeps its containers: %w", u.Name, u.KillMode, err)
	}
	var others []string
	for _, pid := range pids {
		if pid != u.MainPID {
			others = append(others, fmt.Sprint(pid))
		}
	}
	if len(others) == 0 {
		return nil
	}
	named := others[:min(len(others), maxNamed)]
	more := ""
	if len(others) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(others)-maxNamed)
	}
	return fmt.Errorf("unit %s has KillMode=%s (repair needs KillMode=process, or a cgroup holding the main process alone) and %d other processes in its cgroup (PIDs %s%s, in systemd's PID namespace): %w once the main process is gone (a container's shim or conmon, and with it the container); give the unit KillMode=process (a drop-in)",
		u.Name, or(u.KillMode, "unknown"), len(others), strings.Join(named, ", "), more, errKillMode)
}

// setupError is a refusal that the node's setup makes (the unit and its
// settings, where hangwatch runs): it holds until an operator changes it,
// so repair is impossible on this node.
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }
func (e setupError) Unwrap() error { return e.err }

// setup marks err as the node's setup's.
func setup(err error) error { return setupError{err} }

// isSetup tells whether err is the node's setup's.
func isSetup(err error) bool {
	var s setupError
	return errors.As(err, &s)
}

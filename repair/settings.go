package repair

import "time"

// Target is what a repair restarts.
type Target string

// The targets.
const (
	TargetRuntime Target = "runtime"
	TargetKubelet Target = "kubelet"
)

// Outcomes of an attempt, the `outcome` label of hangwatch_repairs_total.
const (
	OutcomeRestarted   = "restarted"
	OutcomeDryRun      = "dry-run"
	OutcomeRefused     = "refused"      // no systemd, no unit, or systemd would not start it again
	OutcomeImpossible  = "impossible"   // the process is in uninterruptible sleep, or the kernel deadlocked
	OutcomeBudgetSpent = "budget-spent" // the target's restarts in the last hour reached the budget
	OutcomeFailed      = "failed"       // the kill itself failed
)

// Outcomes lists every outcome, for the metric's documentation and tests.
var Outcomes = []string{OutcomeRestarted, OutcomeDryRun, OutcomeRefused, OutcomeImpossible, OutcomeBudgetSpent, OutcomeFailed}

// Defaults.
const (
	// DefaultRestartAfter is restartRuntimeAfter's: eight heartbeats and
	// their timeouts failed in a row (docs/install.md says why 20 s).
	DefaultRestartAfter = 20 * time.Second
	// DefaultRestartKubeletAfter is restartKubeletAfter's: the node
	// lifecycle controller marks a node Unknown 50 s after its last Lease
	// renewal, and a kubelet killed at 10 s plus detection (up to 7 s) and
	// kubeadm's RestartSec=10 renews again well before that.
	DefaultRestartKubeletAfter = 10 * time.Second
	DefaultMaxRestartsPerHour  = 3
	DefaultSystemdSocket       = "/run/systemd/private"
	DefaultKubeletUnit         = "kubelet.service"
	// StartupGrace is how long after hangwatch starts no restart is made:
	// the conditions it restored from the Node are not its own sight.
	StartupGrace = time.Minute
)

// Settings turn repair on and pace it. The zero value repairs nothing.
type Settings struct {
	Enabled bool
	// DryRun logs, counts and tells what would be done, and does nothing.
	DryRun bool
	// RestartRuntimeAfter is how long the runtime must have hung as a
	// whole before it is restarted; 0: never.
	RestartRuntimeAfter time.Duration
	// RestartKubeletAfter is how long the kubelet must have stopped
	// answering on the node before it is restarted; 0: never.
	RestartKubeletAfter time.Duration
	// MaxRestartsPerHour is each target's budget.
	MaxRestartsPerHour int
	// RuntimeUnit names the runtime's unit; empty: the unit of the
	// process at the other end of the CRI socket.
	RuntimeUnit string
	// KubeletUnit names the kubelet's unit.
	KubeletUnit string
	// SystemdSocket is systemd's private D-Bus socket.
	SystemdSocket string
}

// after is how long target must be unwell before it is restarted; 0: never.
func (s Settings) after(t Target) time.Duration {
	if !s.Enabled {
		return 0
	}
	if t == TargetKubelet {
		return s.RestartKubeletAfter
	}
	return s.RestartRuntimeAfter
}

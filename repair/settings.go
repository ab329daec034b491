package repair

import (
	"time"

	"github.com/hangwatch/hangwatch/nodelink"
)

// Target is what a repair restarts, named as the link names it.
type Target = string

// The targets.
const (
	TargetRuntime = nodelink.TargetRuntime
	TargetKubelet = nodelink.TargetKubelet
)

// Outcomes of an attempt, the `outcome` label of hangwatch_repairs_total.
const (
	OutcomeRestarted   = "restarted"
	OutcomeDryRun      = "dry-run"
	OutcomeRefused     = "refused"      // no systemd, no unit, or systemd would not start it again
	OutcomeImpossible  = "impossible"   // the process is in uninterruptible sleep, or the kernel deadlocked
	OutcomeBudgetSpent = "budget-spent" // the target's restarts in the last hour reached the budget
	OutcomeFailed      = "failed"       // the kill itself failed (it counts in the budget all the same)
	OutcomeStoodAside  = "stood-aside"  // the Node says an administrator is at work (MaintenanceConditions)
	OutcomeFleetBound  = "fleet-bound"  // the fleet's bound on restarts held it back
)

// Outcomes lists every outcome, for the metric's documentation and tests.
var Outcomes = []string{OutcomeRestarted, OutcomeDryRun, OutcomeRefused, OutcomeImpossible, OutcomeBudgetSpent, OutcomeFailed,
	OutcomeStoodAside, OutcomeFleetBound}

// Defaults.
const (
	// DefaultRestartAfter is restartRuntimeAfter's: 20 s in which a call
	// that judges the whole runtime got no answer at all, while the
	// heartbeat and the cycles kept asking (docs/remediation.md says why).
	DefaultRestartAfter = 20 * time.Second
	// DefaultRestartKubeletAfter is restartKubeletAfter's: the node
	// lifecycle controller marks a node Unknown 50 s after its last Lease
	// renewal, and a kubelet killed at 10 s plus detection (up to 7 s) and
	// kubeadm's RestartSec=10 renews again well before that.
	DefaultRestartKubeletAfter = 10 * time.Second
	DefaultMaxRestartsPerHour  = 3
	DefaultSystemdSocket       = "/run/systemd/private"
	DefaultKubeletUnit         = "kubelet.service"
	// DefaultStateFile keeps the budget on the node, across hangwatch's
	// restarts (a hostPath in the shipped manifests).
	DefaultStateFile = "/var/lib/hangwatch/repair-budget.json"
	// DefaultFleetWindow is repair.fleetWindow's.
	DefaultFleetWindow = 10 * time.Minute
	// DefaultFleetNamespace is where the shipped manifests run hangwatch.
	DefaultFleetNamespace = "kube-system"
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
	// RuntimeSocket is the runtime's own socket, whose listener must be
	// the runtime unit's main process; empty: the CRI endpoint (set it
	// when hangwatch reaches the runtime through a proxy).
	RuntimeSocket string
	// KubeletUnit names the kubelet's unit.
	KubeletUnit string
	// SystemdSocket is systemd's private D-Bus socket.
	SystemdSocket string
	// StateFile keeps each target's attempts of the last hour across
	// hangwatch's restarts; empty: in memory only.
	StateFile string
	// Fleet bounds the restarts across the fleet (Options.Fleet keeps it).
	Fleet FleetSettings
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

package options

import (
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/fence"
	"github.com/hangwatch/hangwatch/repair"
)

// Repair are the repair settings as the repair package takes them.
func Repair(r config.Repair) repair.Settings {
	return repair.Settings{Enabled: r.Enabled, DryRun: r.DryRun, RestartRuntimeAfter: r.RestartRuntimeAfter.Duration,
		RestartKubeletAfter: r.RestartKubeletAfter.Duration, MaxRestartsPerHour: r.MaxRestartsPerHour,
		RuntimeUnit: r.RuntimeUnit, RuntimeSocket: r.RuntimeSocket, KubeletUnit: r.KubeletUnit, SystemdSocket: r.SystemdSocket, StateFile: r.StateFile,
		Fleet: repair.FleetSettings{MaxRestarts: r.FleetMaxRestarts, Window: r.FleetWindow.Duration, Namespace: r.FleetNamespace}}
}

// Fence are the fence's settings as the repair package takes them.
func Fence(r config.Repair) fence.Settings {
	return fence.Settings{Enabled: r.Fence, DryRun: r.FenceDryRun, KillTimeout: r.FenceKillTimeout.Duration,
		KubeletRootDir: r.KubeletRootDir, CgroupRoot: r.CgroupRoot}
}

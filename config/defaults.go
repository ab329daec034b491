package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/fence"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/pleg"
	"github.com/hangwatch/hangwatch/podstarts"
	"github.com/hangwatch/hangwatch/repair"
)

// Defaults that are not another package's.
const (
	// DefaultStatusHeartbeat matches the kubelet's nodeStatusReportFrequency.
	DefaultStatusHeartbeat = 5 * time.Minute
	// DefaultRaiseAfter and DefaultClearAfter are the built-in RuntimeHung
	// rule's, shown where the file does not override them.
	DefaultRaiseAfter = 1
	DefaultClearAfter = 2
)

func d(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }

// Default returns the configuration `run` uses when neither the file nor
// a flag says otherwise.
func Default() *Configuration {
	probe, plegDefaults := cri.DefaultConfig(), pleg.DefaultConfig()
	return &Configuration{Settings: Settings{
		Runtime: Runtime{
			KubeletConfig: cri.DefaultKubeletConfig,
			Period:        d(30 * time.Second), HeartbeatPeriod: d(2500 * time.Millisecond),
			MaxPeriod: d(time.Minute), CallLifetime: d(2 * time.Minute),
			SlowThreshold: d(probe.SlowThreshold), SampleSize: probe.SampleSize, Concurrency: probe.Concurrency,
		},
		Server: Server{ListenAddress: "127.0.0.1:9764", AuthenticationCacheTTL: d(10 * time.Minute)},
		Kernel: Kernel{Enabled: true, KmsgPath: "/dev/kmsg", Lookback: d(5 * time.Minute)},
		APIServer: APIServer{QPS: 5, Burst: 10, LeasePeriod: d(5 * time.Second), LeaseIdlePeriod: d(5 * time.Minute),
			StatusHeartbeatPeriod: d(DefaultStatusHeartbeat)},
		Kubelet: Kubelet{MetricsTimeout: d(kubeletmetrics.DefaultTimeout), MetricsPeriod: d(10 * time.Second),
			HealthzURL: leases.DefaultHealthzURL, HealthzPeriod: d(time.Second)},
		PLEG: PLEG{Window: d(5 * time.Minute), StaleAfter: d(plegDefaults.StaleAfter),
			EmulationStallAfter: d(plegDefaults.EmulationStallAfter), SlowRelist: d(plegDefaults.SlowRelist),
			SlowFor: d(2 * time.Minute), EmulationPeriod: d(5 * time.Second)},
		PodStarts: PodStarts{PodsAPISocket: podstarts.DefaultPodsAPISocket, PodLogsDir: podstarts.DefaultPodLogsDir,
			ContainerdStateDir: podstarts.DefaultContainerdState, Period: d(2 * time.Second),
			Probe: PodStartProbe{Period: d(10 * time.Minute), SandboxImage: podstarts.DefaultSandboxImage}},
		Repair: Repair{RestartRuntimeAfter: d(repair.DefaultRestartAfter), RestartKubeletAfter: d(repair.DefaultRestartKubeletAfter),
			MaxRestartsPerHour: repair.DefaultMaxRestartsPerHour, KubeletUnit: repair.DefaultKubeletUnit,
			SystemdSocket: repair.DefaultSystemdSocket, StateFile: repair.DefaultStateFile,
			FleetWindow: d(repair.DefaultFleetWindow), FleetNamespace: repair.DefaultFleetNamespace,
			FenceKillTimeout: d(fence.DefaultKillTimeout), KubeletRootDir: fence.DefaultKubeletRootDir, CgroupRoot: fence.DefaultCgroupRoot},
	}}
}

// TimeoutOr is the CRI timeout the file or a flag set, or fallback.
func (r Runtime) TimeoutOr(fallback time.Duration) time.Duration {
	if r.Timeout == nil {
		return fallback
	}
	return r.Timeout.Duration
}

// EffectiveHeartbeat is the heartbeat in effect: none when it would come no
// more often than the full cycles, which already call Version.
func (r Runtime) EffectiveHeartbeat() time.Duration {
	if r.HeartbeatPeriod.Duration >= r.Period.Duration {
		return 0
	}
	return r.HeartbeatPeriod.Duration
}

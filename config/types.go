package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/conditions"
)

// The file's identity.
const (
	APIVersion = "hangwatch.io/v1alpha1"
	Kind       = "HangwatchConfiguration"
)

// Configuration is what `hangwatch run` runs with: every setting, and the
// condition rules.
type Configuration struct {
	Settings `json:",inline"`
	// Conditions replace built-in rules of the same type, add new condition
	// types, or drop built-in ones (disabled: true).
	Conditions []conditions.Spec `json:"conditions,omitempty"`
	// SilencedReasons turn reasons off, whichever rule gives them: a
	// reason seen to misfire on a fleet is silenced by a change of the
	// file (reloaded, as the rules are), not a redeploy. A kernel rule
	// whose reason is silenced raises no condition; a condition rule's
	// problem that would give it does not count. Its events still go out.
	SilencedReasons []string `json:"silencedReasons,omitempty"`
}

// Settings are the sections of the file but the condition rules: each leaf
// has a flag of `run` (fields.go).
type Settings struct {
	Runtime             Runtime             `json:"runtime"`
	Server              Server              `json:"server"`
	Kernel              Kernel              `json:"kernel"`
	APIServer           APIServer           `json:"apiServer"`
	Kubelet             Kubelet             `json:"kubelet"`
	PLEG                PLEG                `json:"pleg"`
	PodStarts           PodStarts           `json:"podStarts"`
	RuntimeHung         RuntimeHung         `json:"runtimeHung"`
	KubeletUnresponsive KubeletUnresponsive `json:"kubeletUnresponsive"`
	Repair              Repair              `json:"repair"`
}

// Runtime chooses the CRI endpoint and paces the probe.
type Runtime struct {
	Endpoint string `json:"endpoint"`
	// Timeout of each CRI call; nil: crictl's config's, else
	// cri.DefaultTimeout.
	Timeout         *metav1.Duration `json:"timeout,omitempty"`
	CrictlConfig    string           `json:"crictlConfig"`
	KubeletConfig   string           `json:"kubeletConfig"`
	Period          metav1.Duration  `json:"period"`
	HeartbeatPeriod metav1.Duration  `json:"heartbeatPeriod"`
	MaxPeriod       metav1.Duration  `json:"maxPeriod"`
	CallLifetime    metav1.Duration  `json:"callLifetime"`
	SlowThreshold   metav1.Duration  `json:"slowThreshold"`
	SampleSize      int              `json:"sampleSize"`
	Concurrency     int              `json:"concurrency"`
}

// Server says where hangwatch serves and how its secure port checks
// callers.
type Server struct {
	ListenAddress          string          `json:"listenAddress"`
	SecureListenAddress    string          `json:"secureListenAddress"`
	TLSCertFile            string          `json:"tlsCertFile"`
	TLSPrivateKeyFile      string          `json:"tlsPrivateKeyFile"`
	AuthorizationResource  string          `json:"authorizationResource"`
	AuthenticationCacheTTL metav1.Duration `json:"authenticationCacheTTL"`
}

// Kernel chooses the kernel log and its rules.
type Kernel struct {
	Enabled  bool     `json:"enabled"`
	KmsgPath string   `json:"kmsgPath"`
	Rules    []string `json:"rules,omitempty"`
	// RulePacks are shipped rule packs loaded beside the rules (gpu).
	RulePacks []string        `json:"rulePacks,omitempty"`
	Lookback  metav1.Duration `json:"lookback"`
	// PromotedEvents turn an event rule of the kernel rules into a
	// condition: REASON[=CONDITION][/CLEARAFTER] (kernelrules.go).
	PromotedEvents []string `json:"promotedEvents,omitempty"`
	// GPUInventoryFile remembers the NVIDIA GPUs seen on the PCI bus; a
	// start that finds fewer raises GPUDegraded (package gpus). Needs the
	// gpu rule pack; empty: no count.
	GPUInventoryFile string `json:"gpuInventoryFile,omitempty"`
}

// APIServer reaches the API server: who hangwatch is and how hard it may
// call.
type APIServer struct {
	Kubeconfig             string          `json:"kubeconfig"`
	NodeName               string          `json:"nodeName"`
	QPS                    float64         `json:"qps"`
	Burst                  int             `json:"burst"`
	LeasePeriod            metav1.Duration `json:"leasePeriod"`
	LeaseIdlePeriod        metav1.Duration `json:"leaseIdlePeriod"`
	NodeMonitorGracePeriod metav1.Duration `json:"nodeMonitorGracePeriod"`
	StatusHeartbeatPeriod  metav1.Duration `json:"statusHeartbeatPeriod"`
	OverwriteShared        []string        `json:"overwriteSharedConditions,omitempty"`
}

// Kubelet says where the kubelet's /metrics is and how to get in.
type Kubelet struct {
	MetricsURL            string          `json:"metricsURL"`
	TokenFile             string          `json:"tokenFile"`
	Kubeconfig            string          `json:"kubeconfig"`
	CAFile                string          `json:"caFile"`
	TLSServerName         string          `json:"tlsServerName"`
	InsecureSkipTLSVerify bool            `json:"insecureSkipTLSVerify"`
	MetricsTimeout        metav1.Duration `json:"metricsTimeout"`
	MetricsPeriod         metav1.Duration `json:"metricsPeriod"`
	// HealthzURL is the kubelet's local /healthz, probed every
	// HealthzPeriod; empty: not probed.
	HealthzURL    string          `json:"healthzURL"`
	HealthzPeriod metav1.Duration `json:"healthzPeriod"`
}

// PLEG tunes the PLEG checks.
type PLEG struct {
	Window              metav1.Duration `json:"window"`
	StaleAfter          metav1.Duration `json:"staleAfter"`
	EmulationStallAfter metav1.Duration `json:"emulationStallAfter"`
	SlowRelist          metav1.Duration `json:"slowRelist"`
	SlowFor             metav1.Duration `json:"slowFor"`
	EmulationPeriod     metav1.Duration `json:"emulationPeriod"`
}

// PodStarts watches the write path through the kubelet's Pods API
// (PodStartStuck).
type PodStarts struct {
	// PodsAPISocket is the kubelet's Pods API; empty, or no socket there
	// at start: PodStartStuck is not reported.
	PodsAPISocket string `json:"podsAPISocket"`
	// PodLogsDir is the kubelet's podLogsDir: a pod's log directory there
	// says the kubelet has asked the runtime for its sandbox.
	PodLogsDir string `json:"podLogsDir"`
	// ContainerdStateDir is containerd's state directory: its task
	// directory there tells a pod waiting for its network from one
	// waiting for its sandbox container. Absent (CRI-O) or "": not told.
	ContainerdStateDir string          `json:"containerdStateDir"`
	Period             metav1.Duration `json:"period"`
	// Probe is the opt-in write path probe.
	Probe PodStartProbe `json:"probe"`
}

// PodStartProbe starts a sandbox of hangwatch's own where no pod has
// started for a Period (docs/run.md).
type PodStartProbe struct {
	Enabled bool            `json:"enabled"`
	Period  metav1.Duration `json:"period"`
	// SandboxImage is the runtime's sandbox (pause) image: the probe runs
	// only while it is on the node, so it never makes the runtime pull.
	SandboxImage string `json:"sandboxImage"`
	// PodNetwork puts the probe's sandbox on the pod network (its CNI ADD
	// and DEL); after one that timed out, none for an hour.
	PodNetwork bool `json:"podNetwork"`
}

// RuntimeHung overrides single settings of the built-in RuntimeHung rule;
// nil keeps the rule's own.
type RuntimeHung struct {
	RaiseAfter *int `json:"raiseAfter,omitempty"`
	ClearAfter *int `json:"clearAfter,omitempty"`
}

// KubeletUnresponsive moves the built-in rule's threshold.
type KubeletUnresponsive struct {
	// Share of the grace period the Lease may go unrenewed; 0: two missed
	// renewals.
	Share float64 `json:"share"`
}

// Repair restarts a hung runtime or a kubelet that stopped answering,
// through systemd; off unless enabled. A reload applies it at once.
type Repair struct {
	Enabled             bool            `json:"enabled"`
	DryRun              bool            `json:"dryRun"`
	RestartRuntimeAfter metav1.Duration `json:"restartRuntimeAfter"`
	RestartKubeletAfter metav1.Duration `json:"restartKubeletAfter"`
	MaxRestartsPerHour  int             `json:"maxRestartsPerHour"`
	RuntimeUnit         string          `json:"runtimeUnit"`
	RuntimeSocket       string          `json:"runtimeSocket"`
	KubeletUnit         string          `json:"kubeletUnit"`
	SystemdSocket       string          `json:"systemdSocket"`
	StateFile           string          `json:"stateFile"`
	FleetMaxRestarts    int             `json:"fleetMaxRestarts"`
	FleetWindow         metav1.Duration `json:"fleetWindow"`
	FleetNamespace      string          `json:"fleetNamespace"`
	AgentSocket         string          `json:"agentSocket"`
	// Fence carries out hangwatch-remedy's fence requests (the ladder's
	// fourth rung) in the repair process, with or without Enabled.
	Fence            bool            `json:"fence"`
	FenceDryRun      bool            `json:"fenceDryRun"`
	FenceKillTimeout metav1.Duration `json:"fenceKillTimeout"`
	KubeletRootDir   string          `json:"kubeletRootDir"`
	CgroupRoot       string          `json:"cgroupRoot"`
}

package config

import (
	"slices"
	"strings"

	"github.com/hangwatch/hangwatch/cri"
)

// field is one setting: its path in the file, its flag of `run`, and where
// its value lives in a Configuration. It is the one place that ties the
// two together.
type field struct {
	path, flag, short, usage string
	value                    any // *string, *bool, *int, *float64, *metav1.Duration, *[]string, **metav1.Duration or **int
}

// fields lists every setting of c in file order.
func (c *Configuration) fields() []field {
	s := &c.Settings
	return slices.Concat(runtimeFields(&s.Runtime), serverFields(&s.Server), kernelFields(&s.Kernel),
		apiServerFields(&s.APIServer), kubeletFields(&s.Kubelet), plegFields(&s.PLEG), podStartsFields(&s.PodStarts), conditionFields(s), repairFields(&s.Repair))
}

func runtimeFields(r *Runtime) []field {
	return []field{
		{"runtime.endpoint", "runtime-endpoint", "r", "CRI endpoint (unix:///path); default: $CONTAINER_RUNTIME_ENDPOINT, crictl's config, the kubelet's config, then the containerd, CRI-O and cri-dockerd sockets", &r.Endpoint},
		{"runtime.timeout", "timeout", "t", "how long to wait for each CRI call before reporting it hung; when not given, the timeout in crictl's config applies if set", &r.Timeout},
		{"runtime.crictlConfig", "crictl-config", "", "crictl config file (default $CRI_CONFIG_FILE or " + cri.DefaultCrictlConfig + ")", &r.CrictlConfig},
		{"runtime.kubeletConfig", "kubelet-config", "", "kubelet config file whose containerRuntimeEndpoint is used when readable", &r.KubeletConfig},
		{"runtime.period", "period", "", "time between full probe cycles (every probed call; backs off to --max-period while the runtime is slow)", &r.Period},
		{"runtime.heartbeatPeriod", "heartbeat-period", "", "time between heartbeats: one call, Version and a ListPodSandbox that matches nothing in turn, tracked in flight, that never backs off, so a frozen runtime is RuntimeHung within this plus --timeout and a wedged list path within twice this plus --timeout; 0, or a value not shorter than --period, turns it off", &r.HeartbeatPeriod},
		{"runtime.maxPeriod", "max-period", "", "longest time between cycles while backing off from a slow or hung runtime", &r.MaxPeriod},
		{"runtime.callLifetime", "call-lifetime", "", "how long a hung call stays out (tracked in flight, not sent again) before it is cancelled; the kubelet waits 2m", &r.CallLifetime},
		{"runtime.slowThreshold", "slow-threshold", "", "an answered call slower than this is slow", &r.SlowThreshold},
		{"runtime.sampleSize", "sample-size", "", "most sandboxes, and most containers, whose status one cycle reads", &r.SampleSize},
		{"runtime.concurrency", "concurrency", "", "most per-object status calls out at once", &r.Concurrency},
	}
}

func serverFields(s *Server) []field {
	return []field{
		{"server.listenAddress", "listen-address", "", "plain HTTP, not authenticated: /healthz, and with no --secure-listen-address also /metrics, /conditions and /events (kernel lines withheld); keep it on loopback", &s.ListenAddress},
		{"server.secureListenAddress", "secure-listen-address", "", "HTTPS with bearer tokens checked by TokenReview and SubjectAccessReview: /metrics, /conditions, /events (with kernel lines) and /healthz; for example 0.0.0.0:9765; needs an API server", &s.SecureListenAddress},
		{"server.tlsCertFile", "tls-cert-file", "", "serving certificate of the secure port (PEM, re-read when it changes); empty with --tls-private-key-file: self-signed in memory, as the kubelet does", &s.TLSCertFile},
		{"server.tlsPrivateKeyFile", "tls-private-key-file", "", "private key of --tls-cert-file", &s.TLSPrivateKeyFile},
		{"server.authorizationResource", "authorization-resource", "", "what the secure port checks a caller for: empty for get on the request's path as a non-resource URL (RBAC nonResourceURLs: [\"/metrics\"]); or RESOURCE[.GROUP][/SUBRESOURCE] on this Node, such as nodes/metrics", &s.AuthorizationResource},
		{"server.authenticationCacheTTL", "authentication-cache-ttl", "", "how long a TokenReview or an allowing SubjectAccessReview answer is kept (a denial at most 30s)", &s.AuthenticationCacheTTL},
	}
}

func kernelFields(k *Kernel) []field {
	return []field{
		{"kernel.enabled", "kernel", "", "watch the kernel log with the kernel rules", &k.Enabled},
		{"kernel.kmsgPath", "kmsg-path", "", "kernel log device", &k.KmsgPath},
		{"kernel.rules", "kernel-rules", "", "kernel rules files in node-problem-detector's system-log-monitor format (repeatable); default: the built-in rules", &k.Rules},
		{"kernel.rulePacks", "kernel-rule-packs", "", "shipped kernel rule packs loaded beside the rules (repeatable): gpu (NVIDIA Xid errors: GPUUnavailable, GPUDegraded and events)", &k.RulePacks},
		{"kernel.gpuInventoryFile", "kernel-gpu-inventory-file", "", "a file on the node that remembers the NVIDIA GPUs seen on the PCI bus; a start that finds fewer raises GPUDegraded (reason GPUCountDropped) for the boot; needs the gpu rule pack; empty: no count", &k.GPUInventoryFile},
		{"kernel.lookback", "kernel-lookback", "", "kernel records older than this at start are skipped", &k.Lookback},
		{"kernel.promotedEvents", "kernel-promote-event", "", "make a kernel event rule's reason a condition (repeatable): REASON[=CONDITION][/CLEARAFTER], for example XfsError=FilesystemCorrupt or OOMKilling=OOMKills/10m; the condition is REASON when not named, and lasts until the node reboots when no CLEARAFTER is given", &k.PromotedEvents},
	}
}

func apiServerFields(a *APIServer) []field {
	return []field{
		{"apiServer.kubeconfig", "kubeconfig", "", "kubeconfig for the API server; for the static pod, the kubelet's (/etc/kubernetes/kubelet.conf on kubeadm nodes), whose rotated client certificate is re-read; empty: the in-cluster ServiceAccount when run in a pod, else no API server", &a.Kubeconfig},
		{"apiServer.nodeName", "node-name", "", "this node's name (default $NODE_NAME, else the hostname)", &a.NodeName},
		{"apiServer.qps", "kube-api-qps", "", "most API requests per second", &a.QPS},
		{"apiServer.burst", "kube-api-burst", "", "most API requests in a burst", &a.Burst},
		{"apiServer.leasePeriod", "lease-period", "", "how often the node's Lease is read while the kubelet does not answer its local /healthz (to time the grace period), or the Lease was just found late or missing; failed reads back off from it to --lease-idle-period (a node identity may get its Lease, not watch it)", &a.LeasePeriod},
		{"apiServer.leaseIdlePeriod", "lease-idle-period", "", "how often the node's Lease is read while the kubelet answers its local /healthz: the steady state's one API request (also a Lease held late while the kubelet answers); not shorter than --lease-period; without --kubelet-healthz-url the Lease is read every --lease-period", &a.LeaseIdlePeriod},
		{"apiServer.nodeMonitorGracePeriod", "node-monitor-grace-period", "", "the controller manager's --node-monitor-grace-period; 0: its default for the API server's version (50s from 1.32, 40s before)", &a.NodeMonitorGracePeriod},
		{"apiServer.statusHeartbeatPeriod", "status-heartbeat-period", "", "how often the conditions' lastHeartbeatTime is refreshed while nothing changes; changes are written at once", &a.StatusHeartbeatPeriod},
		{"apiServer.overwriteSharedConditions", "overwrite-shared-conditions", "", "condition types hangwatch writes even when another field manager (node-problem-detector, say) writes them too; others such are left to that writer, reported once", &a.OverwriteShared},
	}
}

func kubeletFields(k *Kubelet) []field {
	return []field{
		{"kubelet.metricsURL", "kubelet-metrics-url", "", "the kubelet's metrics URL, e.g. https://127.0.0.1:10250/metrics (or the read-only port's http://127.0.0.1:10255/metrics); empty: no kubelet metrics, PLEG health from the relist emulation only", &k.MetricsURL},
		{"kubelet.tokenFile", "kubelet-token-file", "", "bearer token file for the kubelet (re-read as it rotates); the identity needs get on nodes/metrics", &k.TokenFile},
		{"kubelet.kubeconfig", "kubelet-kubeconfig", "", "kubeconfig whose client certificate (or token) authenticates to the kubelet; its server and CA are not used", &k.Kubeconfig},
		{"kubelet.caFile", "kubelet-ca-file", "", "CA bundle that signed the kubelet's serving certificate", &k.CAFile},
		{"kubelet.tlsServerName", "kubelet-tls-server-name", "", "name to verify the kubelet's serving certificate against; default: the URL's host, or this node's name (--node-name) for a loopback URL with --kubelet-ca-file, as the kubelet's self-signed certificate names its node", &k.TLSServerName},
		{"kubelet.insecureSkipTLSVerify", "kubelet-insecure-skip-tls-verify", "", "do not verify the kubelet's serving certificate (logged as a warning); allowed only for a loopback URL. Prefer --kubelet-ca-file", &k.InsecureSkipTLSVerify},
		{"kubelet.metricsTimeout", "kubelet-metrics-timeout", "", "deadline of one scrape; a kubelet blocked on a frozen runtime does not answer, and that is reported", &k.MetricsTimeout},
		{"kubelet.metricsPeriod", "kubelet-metrics-period", "", "time between scrapes of the kubelet's metrics", &k.MetricsPeriod},
		{"kubelet.healthzURL", "kubelet-healthz-url", "", "the kubelet's local health endpoint, probed every --kubelet-healthz-period: no answer within 2s makes KubeletUnresponsive True (KubeletNotAnswering); a refused connection does not (nothing listens: the Lease is then read every --lease-idle-period while renewed on time, warned once, hangwatch_kubelet_healthz_refused); empty: not probed (and the Lease read every --lease-period)", &k.HealthzURL},
		{"kubelet.healthzPeriod", "kubelet-healthz-period", "", "time between probes of the kubelet's local /healthz (no API request: it is the fast liveness signal)", &k.HealthzPeriod},
	}
}

func plegFields(p *PLEG) []field {
	return []field{
		{"pleg.window", "pleg-window", "", "span the kubelet's relist p99 is taken over", &p.Window},
		{"pleg.staleAfter", "pleg-stale-after", "", "PLEGUnhealthy (RelistStalled) when kubelet_pleg_last_seen_seconds is older; the kubelet's own threshold is 3m", &p.StaleAfter},
		{"pleg.emulationStallAfter", "pleg-emulation-stall-after", "", "PLEGUnhealthy (RelistStalled) when hangwatch's own relist waits on one CRI call this long", &p.EmulationStallAfter},
		{"pleg.slowRelist", "pleg-slow-relist", "", "PLEGUnhealthy (RelistSlow) when the relist p99, or two emulated relists in a row, take this long", &p.SlowRelist},
		{"pleg.slowFor", "pleg-slow-for", "", "how long RelistSlow must last before PLEGUnhealthy rises (a burst of pods starting slows relists for a while on a healthy node)", &p.SlowFor},
		{"pleg.emulationPeriod", "pleg-emulation-period", "", "time between emulated relists while the kubelet's gauge cannot tell (0 turns the emulation off)", &p.EmulationPeriod},
	}
}

func podStartsFields(p *PodStarts) []field {
	return []field{
		{"podStarts.podsAPISocket", "pods-api-socket", "", "the kubelet's Pods API socket (<kubelet root>/pods-api/pods-api.sock; feature gate PodsAPI, on by default from 1.37), from which PodStartStuck sees pods wait for their sandbox; empty, or no socket there at start: PodStartStuck is not reported", &p.PodsAPISocket},
		{"podStarts.podLogsDir", "pod-logs-dir", "", "the kubelet's podLogsDir: a pod's log directory there says the kubelet has asked the runtime for its sandbox (after its volumes are mounted)", &p.PodLogsDir},
		{"podStarts.containerdStateDir", "containerd-state-dir", "", "containerd's state directory: a pod waiting for its sandbox while containerd has made no sandbox container it does not list waits for its network's setup (the CNI plugin's ADD; PodStartStuck NetworkSetupStuck); names of its task directory only are read. Absent (CRI-O) or empty: the step is not told", &p.ContainerdStateDir},
		{"podStarts.period", "pod-starts-period", "", "how often the pods waiting for their sandbox or a container's create or start are judged", &p.Period},
		{"podStarts.probe.enabled", "pod-start-probe", "", "opt-in: where no pod has started for podStarts.probe.period and none waits, start and remove a host-network sandbox of hangwatch's own, timed in flight (PodStartStuck ProbeSandboxStuck); needs the Pods API", &p.Probe.Enabled},
		{"podStarts.probe.period", "pod-start-probe-period", "", "at most one probe this often, and only after this long without a sandbox started", &p.Probe.Period},
		{"podStarts.probe.podNetwork", "pod-start-probe-pod-network", "", "opt-in: the probe's sandbox on the pod network, so that it covers the CNI plugin's ADD and DEL; a start that times out can leak its pod IP (containerd#5438), so after one that timed out no pod-network probe runs for an hour", &p.Probe.PodNetwork},
		{"podStarts.probe.sandboxImage", "pod-start-probe-sandbox-image", "", "the runtime's sandbox (pause) image: the probe runs only while it is on the node, never making the runtime pull it", &p.Probe.SandboxImage},
	}
}

func conditionFields(s *Settings) []field {
	return []field{
		{"runtimeHung.raiseAfter", "runtime-hung-raise-after", "", "consecutive hung cycles that make RuntimeHung True", &s.RuntimeHung.RaiseAfter},
		{"runtimeHung.clearAfter", "runtime-hung-clear-after", "", "consecutive healthy cycles that make RuntimeHung False again", &s.RuntimeHung.ClearAfter},
		{"kubeletUnresponsive.share", "kubelet-unresponsive-share", "", "raise KubeletUnresponsive once the Lease has gone unrenewed for this share of the grace period (0 < share < 1); 0: after two missed renewals", &s.KubeletUnresponsive.Share},
	}
}

func repairFields(r *Repair) []field {
	return []field{
		{"repair.enabled", "repair", "", "restart a hung runtime or a kubelet that stopped answering, through systemd's D-Bus API: done by `hangwatch repair`, a process of its own (root, hostPID and systemd's private socket) on the agent's view over repair.agentSocket; it applies a reload of the repair settings at once", &r.Enabled},
		{"repair.dryRun", "repair-dry-run", "", "log, count and tell (Event) each restart repair would make, and make none", &r.DryRun},
		{"repair.restartRuntimeAfter", "restart-runtime-after", "", "restart the runtime, while RuntimeHung is True, once a call that judges the whole runtime (Version, Status, the lists, ImageFsInfo; never one object's call) has gone this long with no answer at all; any answer, however late, starts it again; 0: never", &r.RestartRuntimeAfter},
		{"repair.restartKubeletAfter", "restart-kubelet-after", "", "restart the kubelet, while KubeletUnresponsive is True, once its local /healthz has given no answer at all for this long (never for a late Lease alone, nor a refused port); 0: never", &r.RestartKubeletAfter},
		{"repair.maxRestartsPerHour", "max-restarts-per-hour", "", "most restarts of each target (runtime, kubelet) in any hour on this node, dry runs included, kept in repair.stateFile; then an Event, hangwatch_repairs_total{outcome=\"budget-spent\"} and no more", &r.MaxRestartsPerHour},
		{"repair.runtimeUnit", "runtime-unit", "", "the runtime's systemd unit; empty: the unit of the process that listens on the CRI socket; either way its main process must be that listener (on k3s and RKE2 it is not: no restart)", &r.RuntimeUnit},
		{"repair.runtimeSocket", "repair-runtime-socket", "", "the runtime's own socket, whose listener must be the runtime unit's main process (else no kill); empty: the CRI endpoint's; set it only when hangwatch reaches the runtime through a proxy", &r.RuntimeSocket},
		{"repair.kubeletUnit", "kubelet-unit", "", "the kubelet's systemd unit; the process holding the kubelet's health port must be in it", &r.KubeletUnit},
		{"repair.systemdSocket", "systemd-socket", "", "systemd's private D-Bus socket", &r.SystemdSocket},
		{"repair.fleetMaxRestarts", "repair-fleet-max-restarts", "", "most restarts (runtimes and kubelets) the whole fleet makes in any repair.fleetWindow, kept in that many Leases (hangwatch-repair-slot-N in repair.fleetNamespace) that every node's repair takes one of before a kill; a node that cannot reach the API server decides within its own budget; 0: no fleet bound (each node decides alone)", &r.FleetMaxRestarts},
		{"repair.fleetWindow", "repair-fleet-window", "", "the window of repair.fleetMaxRestarts: a slot taken is free again once a node has seen it unchanged this long on its own clock", &r.FleetWindow},
		{"repair.fleetNamespace", "repair-fleet-namespace", "", "the namespace of the fleet's slot Leases (hangwatch's own)", &r.FleetNamespace},
		{"repair.agentSocket", "repair-socket", "", "the Unix socket between the agent (`hangwatch run`, which serves its view there and does for repair what needs the API server) and the repair process (`hangwatch repair`, which reads it and listens on nothing); only root or the agent's user may connect; empty: the agent serves no link and no repair process can run", &r.AgentSocket},
		{"repair.fence", "fence", "", "carry out hangwatch-remedy's fence requests (the ladder's fourth rung, docs/remediation.md \"Fence\"): when the Node asks, RuntimeHung is True for the whole runtime, the runtime still gives no answer and repair is off, spent or has not cured it, stop every pod's processes through their cgroups (but static pods, DaemonSets' pods and pods that tolerate the out-of-service taint), unmount their volumes, then have the agent delete the pods and attest it on the Node; any doubt (a process in D state, a cgroup that will not empty, a busy mount) attests the fence impossible and kills nothing more", &r.Fence},
		{"repair.fenceDryRun", "fence-dry-run", "", "tell (Event) which pods a fence would stop, and stop none", &r.FenceDryRun},
		{"repair.fenceKillTimeout", "fence-kill-timeout", "", "how long the fence waits for each pod's cgroup to empty before it attests the fence impossible", &r.FenceKillTimeout},
		{"repair.kubeletRootDir", "kubelet-root-dir", "", "the kubelet's --root-dir, under which the fence finds each pod's volume mounts", &r.KubeletRootDir},
		{"repair.cgroupRoot", "cgroup-root", "", "where the cgroup file systems are mounted (cgroup v2: the unified one; v1: its freezer at <root>/freezer)", &r.CgroupRoot},
		{"repair.stateFile", "repair-state-file", "", "where each target's restarts of the last hour are kept across hangwatch's own restarts (a hostPath); empty: in memory only, so a hangwatch that restarts forgets its budget", &r.StateFile},
	}
}

func sectionOf(path string) string { s, _, _ := strings.Cut(path, "."); return s }
func leafOf(path string) string    { _, l, _ := strings.Cut(path, "."); return l }

// flagOf names the flag of a setting's path.
func flagOf(path string) string {
	for _, f := range Default().fields() {
		if f.path == path {
			return f.flag
		}
	}
	return ""
}

package config

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/fielderr"
	"github.com/hangwatch/hangwatch/internal/reason"
	"github.com/hangwatch/hangwatch/leases"
)

// checks gathers every problem, so a configuration is reported whole.
type checks struct{ fielderr.List }

func (p *checks) check(bad bool, path string, value any, problem string) {
	p.Check(bad, path, value, problem)
}

func (p *checks) add(err error) { p.Add(err) }

// Validate returns every problem of c: invalid settings as *fielderr.Error,
// and condition rules that do not compile.
func Validate(c *Configuration) []error {
	var p checks
	validateRuntime(&p, c.Runtime)
	validateServer(&p, c.Server)
	validateAPIServer(&p, c.APIServer)
	validateKubelet(&p, c.Kubelet)
	validateKubeletHealthz(&p, c.Kubelet)
	validatePLEG(&p, c.PLEG, c.Kubelet.MetricsPeriod.Duration)
	p.check(c.PodStarts.Period.Duration <= 0, "podStarts.period", c.PodStarts.Period.Duration, "must be positive")
	p.check(c.PodStarts.PodsAPISocket != "" && c.PodStarts.PodLogsDir == "", "podStarts.podLogsDir", c.PodStarts.PodLogsDir, "must be set with podStarts.podsAPISocket")
	p.check(c.PodStarts.Probe.Period.Duration <= 0, "podStarts.probe.period", c.PodStarts.Probe.Period.Duration, "must be positive")
	p.check(c.PodStarts.Probe.Enabled && c.PodStarts.Probe.SandboxImage == "", "podStarts.probe.sandboxImage", `""`, "must name the runtime's sandbox image when the probe is enabled")
	p.check(c.PodStarts.Probe.Enabled && c.PodStarts.PodsAPISocket == "", "podStarts.probe.enabled", true, "needs podStarts.podsAPISocket: the probe runs only where no pod is starting")
	validateConditions(&p, c)
	validateRepair(&p, c.Repair, c.Kubelet.HealthzURL)
	return p.List
}

func validateRuntime(p *checks, r Runtime) {
	period := r.Period.Duration
	p.check(period <= 0, "runtime.period", period, "must be positive")
	p.check(period > 0 && r.MaxPeriod.Duration < period, "runtime.maxPeriod", r.MaxPeriod.Duration, "must not be shorter than --period")
	hb := r.HeartbeatPeriod.Duration
	p.check(hb < 0 || (hb > 0 && hb < 500*time.Millisecond), "runtime.heartbeatPeriod", hb, "must be 0 (off) or at least 500ms")
	p.check(r.Timeout != nil && r.Timeout.Duration <= 0, "runtime.timeout", r.TimeoutOr(0), "must be positive")
	p.check(r.CallLifetime.Duration < r.TimeoutOr(cri.DefaultTimeout), "runtime.callLifetime", r.CallLifetime.Duration, "must not be shorter than --timeout")
	p.check(r.SlowThreshold.Duration <= 0, "runtime.slowThreshold", r.SlowThreshold.Duration, "must be positive")
	p.check(r.SampleSize < 0, "runtime.sampleSize", r.SampleSize, "must not be negative")
	p.check(r.Concurrency < 1, "runtime.concurrency", r.Concurrency, "must be at least 1")
}

func validateServer(p *checks, s Server) {
	_, _, err := net.SplitHostPort(s.ListenAddress)
	p.check(err != nil, "server.listenAddress", s.ListenAddress, "want HOST:PORT")
	if s.SecureListenAddress != "" {
		_, _, err := net.SplitHostPort(s.SecureListenAddress)
		p.check(err != nil, "server.secureListenAddress", s.SecureListenAddress, "want HOST:PORT")
	}
	p.check((s.TLSCertFile == "") != (s.TLSPrivateKeyFile == ""), "server.tlsCertFile", s.TLSCertFile, "give it with --tls-private-key-file, or neither")
	p.check(s.SecureListenAddress == "" && s.TLSCertFile != "", "server.tlsCertFile", s.TLSCertFile, "needs --secure-listen-address")
	ttl := s.AuthenticationCacheTTL.Duration
	p.check(ttl < 0 || ttl > time.Hour, "server.authenticationCacheTTL", ttl, "must be from 0 to 1h")
}

func validateAPIServer(p *checks, a APIServer) {
	p.check(a.QPS <= 0, "apiServer.qps", a.QPS, "must be positive")
	p.check(a.Burst < 1, "apiServer.burst", a.Burst, "must be at least 1")
	p.check(a.NodeMonitorGracePeriod.Duration < 0, "apiServer.nodeMonitorGracePeriod", a.NodeMonitorGracePeriod.Duration, "must not be negative")
	p.check(a.LeasePeriod.Duration <= 0, "apiServer.leasePeriod", a.LeasePeriod.Duration, "must be positive")
	p.check(a.LeaseIdlePeriod.Duration < a.LeasePeriod.Duration, "apiServer.leaseIdlePeriod", a.LeaseIdlePeriod.Duration, "must not be shorter than apiServer.leasePeriod")
	hb := a.StatusHeartbeatPeriod.Duration
	p.check(hb < 10*time.Second, "apiServer.statusHeartbeatPeriod", hb, "must be at least 10s")
	for _, t := range a.OverwriteShared {
		p.check(!conditions.ValidType(t), "apiServer.overwriteSharedConditions", t, "must be a CamelCase condition type")
	}
}

// validateKubelet checks the kubelet settings of config's own; the
// scraper's checks of its options are options.Check's.
func validateKubelet(p *checks, k Kubelet) {
	p.check(k.MetricsURL != "" && k.MetricsTimeout.Duration <= 0, "kubelet.metricsTimeout", k.MetricsTimeout.Duration, "must be positive")
}

func validatePLEG(p *checks, g PLEG, metricsPeriod time.Duration) {
	for _, d := range []struct {
		path string
		d    time.Duration
	}{{"kubelet.metricsPeriod", metricsPeriod}, {"pleg.window", g.Window.Duration}, {"pleg.staleAfter", g.StaleAfter.Duration},
		{"pleg.emulationStallAfter", g.EmulationStallAfter.Duration}, {"pleg.slowRelist", g.SlowRelist.Duration}} {
		p.check(d.d <= 0, d.path, d.d, "must be positive")
	}
	p.check(g.EmulationPeriod.Duration < 0, "pleg.emulationPeriod", g.EmulationPeriod.Duration, "must not be negative")
	p.check(g.SlowFor.Duration < 0, "pleg.slowFor", g.SlowFor.Duration, "must not be negative")
}

func validateRepair(p *checks, r Repair, healthz string) {
	p.check(r.RestartRuntimeAfter.Duration < 0, "repair.restartRuntimeAfter", r.RestartRuntimeAfter.Duration, "must not be negative (0: never)")
	p.check(r.RestartKubeletAfter.Duration < 0, "repair.restartKubeletAfter", r.RestartKubeletAfter.Duration, "must not be negative (0: never)")
	p.check(r.MaxRestartsPerHour < 1 || r.MaxRestartsPerHour > 60, "repair.maxRestartsPerHour", r.MaxRestartsPerHour, "must be from 1 to 60")
	p.check(r.RuntimeSocket != "" && !strings.HasPrefix(r.RuntimeSocket, "/"), "repair.runtimeSocket", r.RuntimeSocket, "must be the absolute path of the runtime's socket, or empty (the CRI endpoint's)")
	p.check(r.FleetMaxRestarts < 0 || r.FleetMaxRestarts > 100, "repair.fleetMaxRestarts", r.FleetMaxRestarts, "must be from 0 (no fleet bound) to 100")
	p.check(r.FleetMaxRestarts > 0 && r.FleetWindow.Duration < time.Minute, "repair.fleetWindow", r.FleetWindow.Duration, "must be at least 1m")
	// the slots admission policy admits a Lease of 60 to 3600 s
	p.check(r.FleetMaxRestarts > 0 && r.FleetWindow.Duration > time.Hour, "repair.fleetWindow", r.FleetWindow.Duration, "must be at most 1h")
	p.check(r.FleetMaxRestarts > 0 && r.FleetNamespace == "", "repair.fleetNamespace", r.FleetNamespace, "must name the namespace of the slot Leases")
	p.check(r.AgentSocket != "" && !strings.HasPrefix(r.AgentSocket, "/"), "repair.agentSocket", r.AgentSocket, "must be an absolute path, or empty (no repair process)")
	p.check(len(r.AgentSocket) > 100, "repair.agentSocket", r.AgentSocket, "must be at most 100 bytes (a Unix socket's path is at most 107)")
	p.check(r.StateFile != "" && !strings.HasPrefix(r.StateFile, "/"), "repair.stateFile", r.StateFile, "must be an absolute path, or empty (in memory only)")
	p.check(r.Enabled && !strings.HasPrefix(r.SystemdSocket, "/"), "repair.systemdSocket", r.SystemdSocket, "must be the absolute path of systemd's private socket")
	p.check(r.Enabled && r.RestartKubeletAfter.Duration > 0 && r.KubeletUnit == "", "repair.kubeletUnit", r.KubeletUnit, "must name the kubelet's unit")
	p.check(r.Enabled && r.RestartKubeletAfter.Duration > 0 && healthz == "", "repair.restartKubeletAfter", r.RestartKubeletAfter.Duration, "needs --kubelet-healthz-url: only a kubelet that does not answer on the node is restarted")
	p.check(r.FenceKillTimeout.Duration < time.Second || r.FenceKillTimeout.Duration > 5*time.Minute, "repair.fenceKillTimeout", r.FenceKillTimeout.Duration, "must be from 1s to 5m")
	p.check(!strings.HasPrefix(r.KubeletRootDir, "/"), "repair.kubeletRootDir", r.KubeletRootDir, "must be the kubelet's absolute --root-dir")
	p.check(!strings.HasPrefix(r.CgroupRoot, "/"), "repair.cgroupRoot", r.CgroupRoot, "must be the absolute path where the cgroup file systems are mounted")
	p.check(r.Fence && r.AgentSocket == "", "repair.fence", r.Fence, "needs repair.agentSocket: the agent reads the request and deletes the pods")
	for _, u := range []struct{ path, unit string }{{"repair.runtimeUnit", r.RuntimeUnit}, {"repair.kubeletUnit", r.KubeletUnit}} {
		p.check(u.unit != "" && !strings.Contains(u.unit, "."), u.path, u.unit, "must be a unit name with its suffix, such as containerd.service")
	}
}

// validateKubeletHealthz checks the health URL and period when a URL is
// given.
func validateKubeletHealthz(p *checks, k Kubelet) {
	if k.HealthzURL == "" {
		return
	}
	_, err := leases.NewHealthz(k.HealthzURL)
	p.check(err != nil, "kubelet.healthzURL", k.HealthzURL, "want http://HOST:PORT/healthz")
	p.check(k.HealthzPeriod.Duration < 100*time.Millisecond, "kubelet.healthzPeriod", k.HealthzPeriod.Duration, "must be at least 100ms")
}

func validateConditions(p *checks, c *Configuration) {
	if n := c.RuntimeHung.RaiseAfter; n != nil {
		p.check(*n < 1, "runtimeHung.raiseAfter", *n, "must be at least 1")
	}
	if n := c.RuntimeHung.ClearAfter; n != nil {
		p.check(*n < 1, "runtimeHung.clearAfter", *n, "must be at least 1")
	}
	share := c.KubeletUnresponsive.Share
	p.check(share < 0 || share >= 1, "kubeletUnresponsive.share", share, "must be 0 (two missed renewals) or between 0 and 1")
	for _, r := range c.SilencedReasons {
		p.check(!reason.Valid(r), "silencedReasons", r, "must be a CamelCase reason, as the Node shows it")
	}
	p.add(conditions.CompileSpecs(c.Conditions, c.RuleParams(), nil)) // the kernel rules are checked with their files (config check, the agent)
}

// Err joins problems, or is nil without any.
func Err(problems []error) error { return errors.Join(problems...) }

package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/internal/checksites"
	"github.com/hangwatch/hangwatch/internal/fielderr"
)

// fieldCase breaks one check of Validate on the defaults: the one problem
// it gives names the field path and the bad value.
type fieldCase struct {
	path, value, problem string
	set                  func(c *Configuration)
}

func dp(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }

func intp(n int) *int { return &n }

var fieldCases = []fieldCase{
	{"runtime.period", "0s", "must be positive", func(c *Configuration) { c.Runtime.Period = d(0) }},
	{"runtime.maxPeriod", "10s", "must not be shorter than --period", func(c *Configuration) { c.Runtime.MaxPeriod = d(10 * time.Second) }},
	{"runtime.heartbeatPeriod", "100ms", "must be 0 (off) or at least 500ms", func(c *Configuration) { c.Runtime.HeartbeatPeriod = d(100 * time.Millisecond) }},
	{"runtime.timeout", "-1s", "must be positive", func(c *Configuration) { c.Runtime.Timeout = dp(-time.Second) }},
	{"runtime.callLifetime", "4s", "must not be shorter than --timeout", func(c *Configuration) {
		c.Runtime.Timeout, c.Runtime.CallLifetime = dp(5*time.Second), d(4*time.Second)
	}},
	{"runtime.slowThreshold", "0s", "must be positive", func(c *Configuration) { c.Runtime.SlowThreshold = d(0) }},
	{"runtime.sampleSize", "-1", "must not be negative", func(c *Configuration) { c.Runtime.SampleSize = -1 }},
	{"runtime.concurrency", "0", "must be at least 1", func(c *Configuration) { c.Runtime.Concurrency = 0 }},
	{"server.listenAddress", "9764", "want HOST:PORT", func(c *Configuration) { c.Server.ListenAddress = "9764" }},
	{"server.secureListenAddress", "9765", "want HOST:PORT", func(c *Configuration) { c.Server.SecureListenAddress = "9765" }},
	{"server.tlsCertFile", "/tls/cert.pem", "give it with --tls-private-key-file, or neither", func(c *Configuration) {
		c.Server.SecureListenAddress, c.Server.TLSCertFile = "0.0.0.0:9765", "/tls/cert.pem"
	}},
	{"server.tlsCertFile", "/tls/cert.pem", "needs --secure-listen-address", func(c *Configuration) {
		c.Server.TLSCertFile, c.Server.TLSPrivateKeyFile = "/tls/cert.pem", "/tls/key.pem"
	}},
	{"server.authenticationCacheTTL", "2h0m0s", "must be from 0 to 1h", func(c *Configuration) { c.Server.AuthenticationCacheTTL = d(2 * time.Hour) }},
	{"apiServer.qps", "0", "must be positive", func(c *Configuration) { c.APIServer.QPS = 0 }},
	{"apiServer.burst", "0", "must be at least 1", func(c *Configuration) { c.APIServer.Burst = 0 }},
	{"apiServer.nodeMonitorGracePeriod", "-1s", "must not be negative", func(c *Configuration) { c.APIServer.NodeMonitorGracePeriod = d(-time.Second) }},
	{"apiServer.leasePeriod", "0s", "must be positive", func(c *Configuration) { c.APIServer.LeasePeriod = d(0) }},
	{"apiServer.leaseIdlePeriod", "1s", "must not be shorter than apiServer.leasePeriod", func(c *Configuration) { c.APIServer.LeaseIdlePeriod = d(time.Second) }},
	{"apiServer.statusHeartbeatPeriod", "5s", "must be at least 10s", func(c *Configuration) { c.APIServer.StatusHeartbeatPeriod = d(5 * time.Second) }},
	{"apiServer.overwriteSharedConditions", "runtime-hung", "must be a CamelCase condition type", func(c *Configuration) {
		c.APIServer.OverwriteShared = []string{"RuntimeHung", "runtime-hung"}
	}},
	{"kubelet.metricsTimeout", "0s", "must be positive", func(c *Configuration) {
		c.Kubelet.MetricsURL, c.Kubelet.MetricsTimeout = "https://127.0.0.1:10250/metrics", d(0)
	}},
	{"kubelet.metricsPeriod", "0s", "must be positive", func(c *Configuration) { c.Kubelet.MetricsPeriod = d(0) }},
	{"pleg.window", "0s", "must be positive", func(c *Configuration) { c.PLEG.Window = d(0) }},
	{"pleg.staleAfter", "0s", "must be positive", func(c *Configuration) { c.PLEG.StaleAfter = d(0) }},
	{"pleg.emulationStallAfter", "0s", "must be positive", func(c *Configuration) { c.PLEG.EmulationStallAfter = d(0) }},
	{"pleg.slowRelist", "0s", "must be positive", func(c *Configuration) { c.PLEG.SlowRelist = d(0) }},
	{"pleg.emulationPeriod", "-1s", "must not be negative", func(c *Configuration) { c.PLEG.EmulationPeriod = d(-time.Second) }},
	{"podStarts.period", "0s", "must be positive", func(c *Configuration) { c.PodStarts.Period = d(0) }},
	{"podStarts.podLogsDir", "", "must be set with podStarts.podsAPISocket", func(c *Configuration) { c.PodStarts.PodLogsDir = "" }},
	{"podStarts.probe.period", "0s", "must be positive", func(c *Configuration) { c.PodStarts.Probe.Period = d(0) }},
	{"podStarts.probe.sandboxImage", `""`, "must name the runtime's sandbox image when the probe is enabled", func(c *Configuration) {
		c.PodStarts.Probe.Enabled, c.PodStarts.Probe.SandboxImage = true, ""
	}},
	{"podStarts.probe.enabled", "true", "needs podStarts.podsAPISocket: the probe runs only where no pod is starting", func(c *Configuration) {
		c.PodStarts.Probe.Enabled, c.PodStarts.PodsAPISocket = true, ""
	}},
	{"pleg.slowFor", "-1s", "must not be negative", func(c *Configuration) { c.PLEG.SlowFor = d(-time.Second) }},
	{"repair.restartRuntimeAfter", "-1s", "must not be negative (0: never)", func(c *Configuration) { c.Repair.RestartRuntimeAfter = d(-time.Second) }},
	{"repair.restartKubeletAfter", "-1s", "must not be negative (0: never)", func(c *Configuration) { c.Repair.RestartKubeletAfter = d(-time.Second) }},
	{"repair.maxRestartsPerHour", "61", "must be from 1 to 60", func(c *Configuration) { c.Repair.MaxRestartsPerHour = 61 }},
	{"repair.fleetMaxRestarts", "-1", "must be from 0 (no fleet bound) to 100", func(c *Configuration) { c.Repair.FleetMaxRestarts = -1 }},
	{"repair.fleetWindow", "30s", "must be at least 1m", func(c *Configuration) { c.Repair.FleetMaxRestarts, c.Repair.FleetWindow = 5, d(30*time.Second) }},
	{"repair.fleetWindow", "2h0m0s", "must be at most 1h", func(c *Configuration) { c.Repair.FleetMaxRestarts, c.Repair.FleetWindow = 5, d(2*time.Hour) }},
	{"repair.fleetNamespace", "", "must name the namespace of the slot Leases", func(c *Configuration) { c.Repair.FleetMaxRestarts, c.Repair.FleetNamespace = 5, "" }},
	{"repair.systemdSocket", "run/systemd/private", "must be the absolute path of systemd's private socket", func(c *Configuration) {
		c.Repair.Enabled, c.Repair.SystemdSocket = true, "run/systemd/private"
	}},
	{"repair.runtimeSocket", "run/containerd/containerd.sock", "must be the absolute path of the runtime's socket, or empty (the CRI endpoint's)", func(c *Configuration) {
		c.Repair.RuntimeSocket = "run/containerd/containerd.sock"
	}},
	{"repair.agentSocket", "repair.sock", "must be an absolute path, or empty (no repair process)", func(c *Configuration) { c.Repair.AgentSocket = "repair.sock" }},
	{"repair.agentSocket", "/" + strings.Repeat("a", 100), "must be at most 100 bytes (a Unix socket's path is at most 107)", func(c *Configuration) { c.Repair.AgentSocket = "/" + strings.Repeat("a", 100) }},
	{"repair.fenceKillTimeout", "0s", "must be from 1s to 5m", func(c *Configuration) { c.Repair.FenceKillTimeout.Duration = 0 }},
	{"repair.kubeletRootDir", "kubelet", "must be the kubelet's absolute --root-dir", func(c *Configuration) { c.Repair.KubeletRootDir = "kubelet" }},
	{"repair.cgroupRoot", "cgroup", "must be the absolute path where the cgroup file systems are mounted", func(c *Configuration) { c.Repair.CgroupRoot = "cgroup" }},
	{"repair.fence", "true", "needs repair.agentSocket: the agent reads the request and deletes the pods", func(c *Configuration) { c.Repair.Fence = true }},
	{"repair.stateFile", "budget.json", "must be an absolute path, or empty (in memory only)", func(c *Configuration) { c.Repair.StateFile = "budget.json" }},
	{"repair.kubeletUnit", "", "must name the kubelet's unit", func(c *Configuration) { c.Repair.Enabled, c.Repair.KubeletUnit = true, "" }},
	{"repair.restartKubeletAfter", "10s", "needs --kubelet-healthz-url: only a kubelet that does not answer on the node is restarted", func(c *Configuration) {
		c.Repair.Enabled, c.Repair.RestartKubeletAfter, c.Kubelet.HealthzURL = true, d(10*time.Second), ""
	}},
	{"repair.runtimeUnit", "containerd", "must be a unit name with its suffix, such as containerd.service", func(c *Configuration) { c.Repair.RuntimeUnit = "containerd" }},
	{"repair.kubeletUnit", "kubelet", "must be a unit name with its suffix, such as containerd.service", func(c *Configuration) { c.Repair.KubeletUnit = "kubelet" }},
	{"kubelet.healthzURL", "127.0.0.1:10248", "want http://HOST:PORT/healthz", func(c *Configuration) { c.Kubelet.HealthzURL = "127.0.0.1:10248" }},
	{"kubelet.healthzPeriod", "10ms", "must be at least 100ms", func(c *Configuration) { c.Kubelet.HealthzPeriod = d(10 * time.Millisecond) }},
	{"runtimeHung.raiseAfter", "0", "must be at least 1", func(c *Configuration) { c.RuntimeHung.RaiseAfter = intp(0) }},
	{"runtimeHung.clearAfter", "-2", "must be at least 1", func(c *Configuration) { c.RuntimeHung.ClearAfter = intp(-2) }},
	{"silencedReasons", "not a reason", "must be a CamelCase reason, as the Node shows it", func(c *Configuration) {
		c.SilencedReasons = []string{"TaskHung", "not a reason"}
	}},
	{"kubeletUnresponsive.share", "1.5", "must be 0 (two missed renewals) or between 0 and 1", func(c *Configuration) { c.KubeletUnresponsive.Share = 1.5 }},
}

// delegatedCases break the checks Validate leaves to other packages (its
// p.add calls): the error names the setting.
var delegatedCases = []struct {
	name, want string
	set        func(c *Configuration)
}{
	{"condition rules", "conditions[0].problems[0].when", func(c *Configuration) {
		c.Conditions = []conditions.Spec{{Type: "Broken", Problems: []conditions.Problem{{When: "cri.nope(", Outcome: conditions.Outcome{Reason: "Bad"}}},
			Healthy: conditions.Outcome{Reason: "Fine"}}}
	}},
}

// TestEachCheckNamesItsFieldAndValue breaks each check alone on the
// defaults: Validate gives exactly its problem, naming the field path and
// the bad value.
func TestEachCheckNamesItsFieldAndValue(t *testing.T) {
	if errs := Validate(Default()); len(errs) != 0 {
		t.Fatalf("the defaults: %v", errs)
	}
	for _, c := range fieldCases {
		t.Run(c.path+": "+c.problem, func(t *testing.T) {
			cfg := Default()
			c.set(cfg)
			errs := Validate(cfg)
			var fe *fielderr.Error
			if len(errs) != 1 || !errors.As(errs[0], &fe) {
				t.Fatalf("want one fielderr.Error, got %q", errs)
			}
			if fe.Path != c.path || fmt.Sprint(fe.Value) != c.value || fe.Problem != c.problem {
				t.Errorf("got %s %v: %s; want %s %s: %s", fe.Path, fe.Value, fe.Problem, c.path, c.value, c.problem)
			}
		})
	}
	for _, c := range delegatedCases {
		cfg := Default()
		c.set(cfg)
		if errs := Validate(cfg); len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s: %q, want one error with %q", c.name, errs, c.want)
		}
	}
}

// TestEveryCheckHasACase reads validation.go's checks (each p.check call,
// a literal table's rows each) and wants a case for each, so a new check
// without one fails here; and each case for a check that is there.
func TestEveryCheckHasACase(t *testing.T) {
	cases := make([]checksites.Case, 0, len(fieldCases))
	for _, c := range fieldCases {
		cases = append(cases, checksites.Case{Path: c.path, Problem: c.problem})
	}
	sites := checksites.RequireCases(t, "validation.go", "check", 1, 3, cases)
	adds, err := checksites.Calls("validation.go", "add", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != len(delegatedCases) {
		t.Errorf("validation.go hands %d checks to other packages (p.add), delegatedCases has %d", len(adds), len(delegatedCases))
	}
	t.Logf("%d checks, %d handed to other packages", len(sites), len(adds))
}

package agent

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/clocktest"
	"github.com/hangwatch/hangwatch/internal/memlimit"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/spf13/pflag"
)

var agentT0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

// inProcess is an agent wired to in-process parts on a fake clock.
type inProcess struct {
	agent   *Agent
	clk     *testclock.FakeClock
	runtime *quietRuntime
	api     *fake.Clientset
	kmsg    *scriptedKmsg
	addrs   []string
	done    chan error
	stop    context.CancelFunc
}

// startInProcess assembles the agent from cfg as `run` would, with the
// quiet runtime, a fake Clientset holding node-a and its Lease, and a
// scripted kernel log, and runs it until the test ends.
func startInProcess(t *testing.T, cfg *config.Configuration) *inProcess {
	t.Helper()
	return startInProcessWith(t, &config.Loaded{Configuration: cfg}, nil)
}

// startInProcessWith is startInProcess of a loaded configuration, with
// reloads when reload is set; each of more changes the options.
func startInProcessWith(t *testing.T, cfg *config.Loaded, reload *Reload, more ...func(*Options)) *inProcess {
	t.Helper()
	clk := testclock.NewFakeClock(agentT0)
	p := &inProcess{clk: clk, runtime: &quietRuntime{}, kmsg: &scriptedKmsg{lines: make(chan string, 1), clk: clk}, done: make(chan error, 1)}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: agentT0}}}
	p.api = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, lease)
	ready := make(chan []string, 1)
	o := Options{Config: cfg, Reload: reload, Endpoint: cri.Endpoint{Address: "in-process", Timeout: 2 * time.Second},
		Node: "node-a", Client: clientsetAPI{p.api}, Clock: clk,
		DialCRI: func(string) (*cri.Conn, error) { return cri.NewConn(p.runtime, p.runtime), nil },
		OpenKernelLog: func(string, time.Duration, clock.PassiveClock) (kernellog.Source, string, error) {
			return p.kmsg, "scripted", nil
		},
		Cgroup:  memlimit.Files{Root: t.TempDir(), Self: "/nonexistent"}, // no limit: the test process's own is left alone
		OnReady: func(addrs []string) { ready <- addrs }}
	for _, change := range more {
		change(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() { p.done <- a.Run(ctx) }()
	select {
	case p.addrs = <-ready:
	case err := <-p.done:
		t.Fatalf("the agent stopped before serving: %v", err)
	}
	t.Cleanup(func() {
		p.stop()
		<-p.done
		a.Close()
	})
	return p
}

// onNode is the status of a condition on node-a, "" while it is absent.
func (p *inProcess) onNode(t *testing.T, condType string) corev1.ConditionStatus {
	t.Helper()
	node, err := p.api.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if string(c.Type) == condType {
			return c.Status
		}
	}
	return ""
}

// messageOnNode is the message of the Node's condition of condType.
func (p *inProcess) messageOnNode(t *testing.T, condType string) string {
	t.Helper()
	node, err := p.api.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if string(c.Type) == condType {
			return c.Message
		}
	}
	return ""
}

// stepUntil steps the fake clock 100ms at a time, letting the agent's
// goroutines run between steps, until cond holds; it fails after 60
// simulated seconds. It returns the simulated time it took.
func (p *inProcess) stepUntil(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	return clocktest.StepUntil(t, p.clk, 1, 100*time.Millisecond, time.Minute, what, cond)
}

// TestTheAgentWiresEverySignalToTheNode runs the whole assembly in-process
// on a fake clock: each signal reaches its condition on the Node through
// the engine and the reporter, the transitions are Events, and the HTTP
// endpoints serve. The real parts (containerd, kube-apiserver, the
// kubelet, /dev/kmsg) are exercised by test/integration.
func TestTheAgentWiresEverySignalToTheNode(t *testing.T) {
	cfg := config.Default()
	cfg.Server.ListenAddress = "127.0.0.1:0"
	// no kubelet health probe: whatever listens on this machine's 10248
	// (the e2e suite's installs run a kubelet there) is not this test's
	// kubelet; its Lease is read every period
	cfg.Kubelet.HealthzURL = ""
	cfg.APIServer.LeaseIdlePeriod = cfg.APIServer.LeasePeriod
	p := startInProcess(t, cfg)
	p.stepUntil(t, "RuntimeHung=False on the Node", func() bool { return p.onNode(t, "RuntimeHung") == corev1.ConditionFalse })
	if got := p.onNode(t, "KernelDeadlock"); got != corev1.ConditionFalse {
		t.Errorf("KernelDeadlock after the lookback: %q, want False", got)
	}
	p.runtime.frozen.Store(true)
	took := p.stepUntil(t, "RuntimeHung=True", func() bool { return p.onNode(t, "RuntimeHung") == corev1.ConditionTrue })
	t.Logf("RuntimeHung True on the Node %v (simulated) after the freeze", took)
	if took > 10*time.Second { // heartbeat 2.5s + timeout 2s, and the coalescing
		t.Errorf("RuntimeHung took %v after the freeze, want within the heartbeat and the timeout", took)
	}
	p.kmsg.lines <- "INFO: task containerd:7 blocked for more than 120 seconds."
	p.stepUntil(t, "KernelDeadlock=True", func() bool { return p.onNode(t, "KernelDeadlock") == corev1.ConditionTrue })
	p.stepUntil(t, "KubeletUnresponsive=True (nobody renews the Lease)", func() bool {
		return p.onNode(t, "KubeletUnresponsive") == corev1.ConditionTrue
	})
	events, err := p.api.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, e := range events.Items {
		reasons[e.Reason] = true
		if e.Reason == "ContainerRuntimeTaskBlocked" && (strings.Contains(e.Message, "containerd:7") || !strings.Contains(e.Message, `kernel log rule "runtime-task-blocked"`)) {
			t.Errorf("the KernelDeadlock Event's message %q: want the rule, never the kernel line", e.Message)
		}
	}
	if msg := p.messageOnNode(t, "KernelDeadlock"); strings.Contains(msg, "containerd:7") || !strings.Contains(msg, "(reason ContainerRuntimeTaskBlocked)") {
		t.Errorf("KernelDeadlock's message on the Node %q: want the rule and reason, never the kernel line", msg)
	}
	if !reasons["VersionHung"] && !reasons["ListPodSandboxHung"] { // the beat that saw the freeze: Version or the list beat
		t.Errorf("no VersionHung or ListPodSandboxHung Event; the Events' reasons: %v", reasons)
	}
	for _, want := range []string{"ContainerRuntimeTaskBlocked", "NodeLeaseNotRenewed"} {
		if !reasons[want] { // one Event per transition to True, with the condition's reason
			t.Errorf("no %s Event; the Events' reasons: %v", want, reasons)
		}
	}
	body := get(t, "http://"+p.addrs[0]+"/conditions")
	for _, want := range []string{"RuntimeHung", "KernelDeadlock", "KubeletUnresponsive", "PLEGUnhealthy"} {
		if !strings.Contains(body, want) {
			t.Errorf("/conditions lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "containerd:7") {
		t.Errorf("the plain /conditions shows the kernel line:\n%s", body)
	}
	if body := get(t, "http://"+p.addrs[0]+"/events"); strings.Contains(body, "containerd:7") ||
		!strings.Contains(body, `"condition": "KernelDeadlock"`) {
		t.Errorf("the plain /events: want the raising event listed, its line withheld:\n%s", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAReloadChangesARuleInProcess: a rule edited in the file is picked up
// by the poll on the agent's clock, and a refused file (a misspelled field) leaves the running
// rule; SIGHUP reloads at once.
func TestAReloadChangesARuleInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	rule := func(when string) string {
		return "apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nserver:\n  listenAddress: 127.0.0.1:0\n" +
			"conditions:\n- type: HasNoContainers\n  problems:\n  - when: " + when + "\n    reason: Empty\n  healthy: {reason: Busy}\n"
	}
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(rule("cri.containers > 0"))
	hup := make(chan os.Signal, 1)
	p := startReloading(t, path, hup)
	status := func() conditions.Status {
		for _, c := range p.agent.Conditions() {
			if c.Type == "HasNoContainers" {
				return c.Status
			}
		}
		return ""
	}
	p.stepUntil(t, "HasNoContainers=False", func() bool { return status() == conditions.StatusFalse })
	write(rule("cri.containers == 0"))
	took := p.stepUntil(t, "HasNoContainers=True after the edit", func() bool { return status() == conditions.StatusTrue })
	t.Logf("the edited rule raised its condition %v (simulated) after the write", took)
	write(rule("cri.containres == 0")) // a misspelled field: refused, not an error at each evaluation
	hup <- syscall.SIGHUP
	p.stepUntil(t, "the refusal", func() bool { return strings.Contains(metricsText(t, p), "hangwatch_config_last_reload_successful 0") })
	if status() != conditions.StatusTrue {
		t.Errorf("a refused file changed the running rule: %s", status())
	}
}

func metricsText(t *testing.T, p *inProcess) string {
	t.Helper()
	return get(t, "http://"+p.addrs[0]+"/metrics")
}

// startReloading starts the agent from the config file at path, as `run
// --config path` would, reloading it on a change and on hup.
func startReloading(t *testing.T, path string, hup chan os.Signal) *inProcess {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	config.AddFlags(fs, config.Default())
	loader := &config.Loader{Path: path, Named: "--config", Flags: fs}
	loaded, err := loader.Load()
	if err != nil {
		t.Fatal(err)
	}
	return startInProcessWith(t, loaded, &Reload{Path: path, Load: loader.LoadBytes, Signal: hup})
}

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/measurements"
)

// The API request budget (issue 28): hangwatch's requests per node per
// minute, counted from the API server's audit log, for a fleet of 20
// hangwatch processes with 20 node identities against one API server,
// beside a real kubelet's own requests in the same run. One node has a
// real kubelet; the others a local /healthz that answers and a Lease the
// test renews every 10 s, as a kubelet does. Every secure port is scraped
// every 15 s with the PodMonitor's token, so the reviews count too. Two
// more processes read the Lease every 5 s whatever the kubelet says (the
// behaviour before the budget), for comparison. HANGWATCH_E2E_BUDGET is
// how long the steady state is counted (hack/e2e.sh --api-budget: 10m).
func TestAPIRequestBudget(t *testing.T) {
	steady := budgetDuration(t)
	cp := harness.StartControlPlaneT(t)
	// every node identity may read its kubelet's /metrics, as installed
	cp.Kubectl(t, "apply", "-k", filepath.Join(harness.ModuleRoot(), "manifests", "overlays", "static-pod"))
	c := containerd.StartT(t, 0, 0)
	k := kubelet.StartT(t, cp, c, hangwatch.UniqueNode("hw-budget-kubelet"))
	b := &budgetRun{t: t, cp: cp, c: c, scraper: hangwatch.ApplyScraperIdentity(t, cp)}
	realNode := b.startRealNode(k)
	for i := 1; i < 20; i++ {
		b.startFakeNode("hw-budget", nil)
	}
	for i := 0; i < 2; i++ {
		b.startFakeNode("hw-budget-before", []string{"--lease-idle-period", "5s"})
	}
	stopScrapes := b.scrapeEvery(15 * time.Second) // the first reviews, cached for 5m, before the count
	defer stopScrapes()
	b.waitAllFalse()

	begin := time.Now()
	harness.Eventually(t, steady+time.Minute, "the steady state to be counted", func() bool { return time.Since(begin) >= steady })
	b.report("steady", begin, time.Now())

	if err := k.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	harness.Eventually(t, time.Minute, "a minute of a frozen kubelet", func() bool { return time.Since(frozen) >= time.Minute })
	frozenCount := b.count(frozen, time.Now(), realNode.node, "hangwatch/")
	if err := k.Thaw(); err != nil {
		t.Fatal(err)
	}
	measurements.Record(t, "budget_frozen_kubelet_requests_per_min", perMinute(frozenCount, time.Since(frozen)), "requests/min")

	late := b.nodes[1]
	close(late.stopRenew)
	stopped := time.Now()
	harness.Eventually(t, 2*time.Minute, "two minutes of a Lease not renewed while the kubelet answers", func() bool { return time.Since(stopped) >= 2*time.Minute })
	measurements.Record(t, "budget_late_lease_requests_per_min", perMinute(b.count(stopped, time.Now(), late.node, "hangwatch/"), time.Since(stopped)), "requests/min")
}

func budgetDuration(t *testing.T) time.Duration {
	raw := os.Getenv("HANGWATCH_E2E_BUDGET")
	if raw == "" {
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < time.Minute {
		t.Fatalf("HANGWATCH_E2E_BUDGET=%q: want a duration of at least 1m", raw)
	}
	return d
}

type budgetNode struct {
	node, secure string
	d            *hangwatch.Daemon
	stopRenew    chan struct{}
	before       bool // reads the Lease every 5s: the behaviour before the budget
}

type budgetRun struct {
	t       *testing.T
	cp      *harness.ControlPlane
	c       *containerd.Containerd
	scraper string
	nodes   []*budgetNode
}

// startRealNode runs hangwatch beside the real kubelet k as the static pod
// does: the kubelet's credential, its metrics and its /healthz.
func (b *budgetRun) startRealNode(k *kubelet.Kubelet) *budgetNode {
	kc, err := b.cp.NodeKubeconfig(k.Node)
	if err != nil {
		b.t.Fatal(err)
	}
	cfg := fmt.Sprintf("kubelet:\n  healthzURL: %s\n  metricsURL: %s\n  kubeconfig: %s\n  caFile: %s\n", k.HealthzURL(), k.MetricsURL(), kc, k.ServingCert)
	return b.start(k.Node, kc, cfg, nil, nil)
}

// startFakeNode runs hangwatch for a new Node whose Lease the test renews
// every 10s and whose /healthz answers 200.
func (b *budgetRun) startFakeNode(base string, extra []string) *budgetNode {
	node := hangwatch.UniqueNode(base)
	kc := hangwatch.CreateNode(b.t, b.cp, node)
	healthz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	b.t.Cleanup(healthz.Close)
	stop := make(chan struct{})
	hangwatch.RenewLease(b.t, harness.ClientFor(b.t, kc), node, 10*time.Second, stop)
	n := b.start(node, kc, fmt.Sprintf("kubelet:\n  healthzURL: %s/healthz\n", healthz.URL), extra, stop)
	n.before = len(extra) > 0
	b.t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	})
	return n
}

func (b *budgetRun) start(node, kc, cfg string, extra []string, stopRenew chan struct{}) *budgetNode {
	path := filepath.Join(b.t.TempDir(), "hangwatch.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\n"+cfg), 0o644); err != nil {
		b.t.Fatal(err)
	}
	secure := harness.FreeAddr(b.t)
	args := append(hangwatch.NodeArgs(kc, node, "--config", path, "--secure-listen-address", secure), extra...)
	n := &budgetNode{node: node, secure: secure, d: hangwatch.StartDaemon(b.t, b.c.Endpoint, args...), stopRenew: stopRenew}
	b.nodes = append(b.nodes, n)
	return n
}

func (b *budgetRun) waitAllFalse() {
	for _, n := range b.nodes {
		harness.Eventually(b.t, 2*time.Minute, n.node+": KubeletUnresponsive False", func() bool {
			c := hangwatch.NodeCond(b.t, b.cp, n.node, "KubeletUnresponsive")
			return c != nil && c.Status == corev1.ConditionFalse
		})
	}
}

// scrapeEvery scrapes each secure port with the PodMonitor's token, as
// Prometheus would, until the returned func is called.
func (b *budgetRun) scrapeEvery(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range b.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				if code, body := secureGetQuiet("https://"+n.secure+"/metrics", b.scraper); code != http.StatusOK {
					b.t.Logf("scrape of %s: %d %s", n.node, code, harness.FirstLine(body))
				}
				select {
				case <-done:
					return
				case <-tick.C:
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// count is how many requests user system:node:<node> made with a user
// agent starting with agent in [from, to).
func (b *budgetRun) count(from, to time.Time, node, agent string) int {
	return len(b.events(from, to, node, agent))
}

func (b *budgetRun) events(from, to time.Time, node, agent string) []harness.AuditEvent {
	all, err := b.cp.AuditEvents()
	if err != nil {
		b.t.Fatal(err)
	}
	var out []harness.AuditEvent
	for _, e := range all {
		if e.User == "system:node:"+node && strings.HasPrefix(e.UserAgent, agent) && !e.At.Before(from) && e.At.Before(to) {
			out = append(out, e)
		}
	}
	return out
}

// report logs hangwatch's requests per node per minute over [from, to),
// the 20 nodes' mean and worst, what they were, and the kubelet's own.
func (b *budgetRun) report(phase string, from, to time.Time) {
	span := to.Sub(from)
	kinds := map[string]int{}
	var rates, before []float64
	for _, n := range b.nodes {
		evs := b.events(from, to, n.node, "hangwatch/")
		if n.before {
			before = append(before, perMinute(len(evs), span))
			continue
		}
		rates = append(rates, perMinute(len(evs), span))
		for _, e := range evs {
			kinds[strings.ToLower(e.Verb)+" "+e.Resource]++
		}
	}
	sort.Float64s(rates)
	t := b.t
	var parts []string
	for kind, n := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2f", kind, perMinute(n, span)/float64(len(rates))))
	}
	sort.Strings(parts)
	measurements.Record(t, "budget_"+phase+"_minutes", span.Minutes(), "min")
	measurements.Record(t, "budget_"+phase+"_hangwatch_requests_per_node_min", mean(rates), "requests/min",
		"per node per minute by kind: "+strings.Join(parts, ", "))
	measurements.Record(t, "budget_"+phase+"_hangwatch_requests_per_node_min_max", rates[len(rates)-1], "requests/min")
	measurements.Record(t, "budget_"+phase+"_before_requests_per_node_min", mean(before), "requests/min")
	kubeletName := b.nodes[0].node
	measurements.Record(t, "budget_"+phase+"_kubelet_requests_per_min", perMinute(b.count(from, to, kubeletName, "kubelet/"), span), "requests/min")
	var reviews int
	for _, e := range b.events(from, to, kubeletName, "kubelet/") {
		if strings.HasSuffix(e.Resource, "reviews") {
			reviews++
		}
	}
	measurements.Record(t, "budget_"+phase+"_kubelet_reviews_per_min", perMinute(reviews, span), "requests/min")
}

func perMinute(n int, span time.Duration) float64 { return float64(n) / span.Minutes() }

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// secureGetQuiet is secureGet for a goroutine: a failure comes back as
// code 0 and the error's text.
func secureGetQuiet(url, token string) (int, string) {
	code, body, err := harness.Get(url, harness.Token(token), harness.Client(harness.SecureClient))
	if err != nil {
		return 0, err.Error()
	}
	return code, body
}

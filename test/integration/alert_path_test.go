package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/repair"
	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/alerting"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// The alert path, end to end: a real Prometheus scrapes hangwatch's
// secure port the way the shipped PodMonitor does, and the kubelets the
// way kube-prometheus does, evaluates the shipped PrometheusRule and the
// dashboard's queries, and sends its alerts to a real Alertmanager, which
// delivers them to a webhook receiver the test serves.

// kubeletScrapeInterval is kube-prometheus' kubelet ServiceMonitor's.
const kubeletScrapeInterval = 30 * time.Second

// testRoute is the test's Alertmanager route: Alertmanager's default
// group_wait (30 s); a group_interval of 1 m, where Alertmanager's
// default (and kube-prometheus') is 5 m, so a resolution is told within
// a minute rather than five (docs/runbooks.md, "From a hang to a page").
var testRoute = alerting.AlertRoute{GroupWait: 30 * time.Second, GroupInterval: time.Minute}

// alertRig is two kubelet nodes with hangwatch on each (A with repair,
// its restart budget already spent), Prometheus and Alertmanager.
type alertRig struct {
	a, b     hangwatch.KubeletNode
	da, db   *hangwatch.Daemon
	prom     *alerting.Prometheus
	receiver *alerting.AlertReceiver
}

func startAlertRig(t *testing.T) *alertRig {
	t.Helper()
	r := &alertRig{a: hangwatch.StartKubeletNode(t), b: hangwatch.StartKubeletNode(t)}
	cp := r.a.CP
	scraper := hangwatch.ApplyScraperIdentity(t, cp)
	r.da = alertDaemon(t, r.a, scraper, true)
	r.db = alertDaemon(t, r.b, scraper, false)
	kubeletToken := harness.TokenFile(t, cp.ServiceAccountToken(t, hangwatch.UniqueNode("hw-prometheus-kubelet"), hangwatch.GetNodesMetrics))
	rules := alerting.PrometheusRuleFile(t)
	r.receiver = alerting.StartAlertReceiver(t)
	am := alerting.StartAlertmanager(t, testRoute, r.receiver)
	r.prom = alerting.StartPrometheus(t, alerting.PrometheusSetup{
		Jobs: []alerting.ScrapeJob{
			alerting.PodMonitorJob(t, harness.TokenFile(t, scraper), map[string]string{r.da.Secure: r.a.K.Node, r.db.Secure: r.b.K.Node}),
			kubeletJob(kubeletToken, r.a, r.b),
		},
		RulesFile: rules, Alertmanager: am.Addr,
	})
	harness.Eventually(t, time.Minute, "Prometheus to scrape both hangwatches and both kubelets", func() bool {
		return r.prom.Up("hangwatch", 2) && r.prom.Up("kubelet", 2)
	}, harness.UnlessExited(r.prom, am, r.da, r.db))
	return r
}

// kubeletJob scrapes the kubelets' /metrics as kube-prometheus' kubelet
// ServiceMonitor does: its ServiceAccount's token (get on nodes/metrics),
// insecureSkipVerify (a kubelet's certificate is its own, self-signed)
// and a node label.
func kubeletJob(tokenFile string, nodes ...hangwatch.KubeletNode) alerting.ScrapeJob {
	j := alerting.ScrapeJob{Name: "kubelet", Scheme: "https", Path: "/metrics", Interval: kubeletScrapeInterval,
		TokenFile: tokenFile, InsecureSkipVerify: true, Targets: map[string]string{}}
	for _, n := range nodes {
		j.Targets[strings.TrimSuffix(strings.TrimPrefix(n.K.MetricsURL(), "https://"), "/metrics")] = n.K.Node
	}
	return j
}

// alertDaemon runs hangwatch as the DaemonSet does: the node's identity,
// the kubelet's metrics, the kernel log with the built-in rules, /metrics
// on the secure port only; with repair, `hangwatch repair` beside it and
// a restart budget already spent (three restarts in the last hour that
// did not cure the runtime).
func alertDaemon(t *testing.T, n hangwatch.KubeletNode, scraper string, repair bool) *hangwatch.Daemon {
	t.Helper()
	kc, err := n.CP.NodeKubeconfig(n.K.Node)
	if err != nil {
		t.Fatal(err)
	}
	token := harness.TokenFile(t, n.CP.ServiceAccountToken(t, hangwatch.UniqueNode("hw-alerts-kubelet"), hangwatch.GetNodesMetrics))
	secure := harness.FreeAddr(t)
	args := hangwatch.NodeArgs(kc, n.K.Node, "--secure-listen-address", secure,
		"--kubelet-metrics-url", n.K.MetricsURL(), "--kubelet-ca-file", n.K.ServingCert, "--kubelet-tls-server-name", n.K.Node,
		"--kubelet-token-file", token)
	args = append(append(args, hangwatch.PodStartsArgs(n.K, n.C.Where())...), "--config", alertConfig(t, n, repair))
	if repair {
		args = hangwatch.RepairArgs(t, append(args, "--repair-state-file", spentRepairBudget(t))...)
	}
	d := hangwatch.StartDaemon(t, n.C.Where().Endpoint, args...)
	d.Secure, d.MetricsToken = secure, scraper
	if repair {
		hangwatch.LinkRepair(t, d, n.C.Where().Endpoint, args...)
	}
	return d
}

// alertConfig points hangwatch at the kubelet's /healthz on its port
// (the shipped config's is the kubelet's default, 10248), and turns repair
// on: its runtime budget is spent, so it never looks for a unit to
// restart.
func alertConfig(t *testing.T, n hangwatch.KubeletNode, repair bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hangwatch.yaml")
	body := fmt.Sprintf("apiVersion: hangwatch.io/v1alpha1\nkind: HangwatchConfiguration\nkubelet:\n  healthzURL: %s\n", n.K.HealthzURL())
	if repair {
		body += "repair:\n  enabled: true\n"
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// spentRepairBudget is repair's state file after three restarts of the
// runtime in the last hour of this boot, its default budget (counted on
// the boot clock: docs/remediation.md, Repair).
func spentRepairBudget(t *testing.T) string {
	t.Helper()
	boot, err := repair.HostBoot()
	if err != nil {
		t.Fatal(err)
	}
	at := func(ago time.Duration) map[string]int64 {
		return map[string]int64{"bootTimeNs": int64(boot.Since - ago)}
	}
	state := map[string]any{"version": 2, "bootID": boot.ID, "attempts": map[string][]map[string]int64{
		"runtime": {at(20 * time.Minute), at(15 * time.Minute), at(10 * time.Minute)}}}
	raw, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "repair-budget.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShippedAlertsPageThroughAlertmanager freezes node A's containerd
// and node B's kubelet, and measures how long each shipped alert takes
// from the freeze to the receiver, and from the thaw to its resolution.
func TestShippedAlertsPageThroughAlertmanager(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	r := startAlertRig(t)
	dashboardQueriesReturnSeries(t, r.prom, r.a.K.Node, r.b.K.Node)

	a, b := r.a.K.Node, r.b.K.Node
	pages := []page{
		{"HangwatchRuntimeHung", a, true}, {"HangwatchPLEGUnhealthy", a, true},
		{"HangwatchKubeletPLEGStalled", a, true}, {"HangwatchKubeletUnresponsive", b, true},
		{"HangwatchCRICallStuck", a, true},
		// counted once per hang, it looks back an hour: it resolves an hour after
		{"HangwatchRepairBudgetSpent", a, false},
	}
	frozen := time.Now()
	thawRuntime, thawKubelet := harness.Freeze(t, r.a.C), harness.Freeze(t, r.b.K)
	r.waitPages(t, pages, "firing", frozen, 5*time.Minute)
	r.logConditions(t, frozen)

	thawRuntime()
	thawKubelet()
	thawed := time.Now()
	var resolving []page
	for _, p := range pages {
		if p.resolves {
			resolving = append(resolving, p)
		}
	}
	r.waitPages(t, resolving, "resolved", thawed, 4*time.Minute)
}

// page is an alert the test waits for, on a node.
type page struct {
	alert, node string
	resolves    bool // resolved within the test once the node is thawed
}

// waitPages waits until the receiver has each page with status since
// start, and records how long each took.
func (r *alertRig) waitPages(t *testing.T, pages []page, status string, start time.Time, limit time.Duration) {
	t.Helper()
	missing := func() []string {
		var out []string
		for _, p := range pages {
			if _, ok := r.receiver.First(p.alert, p.node, status, start); !ok {
				out = append(out, p.alert)
			}
		}
		return out
	}
	harness.Eventually(t, limit, status+" notifications at the receiver", func() bool { return len(missing()) == 0 },
		harness.Explaining(func() string {
			return fmt.Sprintf("not yet %s: %v; received: %v", status, missing(), r.receiver.All())
		}), harness.UnlessExited(r.prom, r.da, r.db))
	what := map[string]string{"firing": "freeze", "resolved": "thaw"}[status]
	for _, p := range pages {
		at, _ := r.receiver.First(p.alert, p.node, status, start)
		harness.Measure(t, fmt.Sprintf("alert_%s_%s_after_%s", strings.ToLower(strings.TrimPrefix(p.alert, "Hangwatch")), status, what), at.Sub(start))
	}
}

// logConditions logs when hangwatch put each condition True on the
// Nodes, the first step of each page.
func (r *alertRig) logConditions(t *testing.T, frozen time.Time) {
	t.Helper()
	for _, c := range []struct{ node, cond string }{{r.a.K.Node, "RuntimeHung"}, {r.a.K.Node, "PLEGUnhealthy"}, {r.b.K.Node, "KubeletUnresponsive"}} {
		if nc := hangwatch.NodeCond(t, r.a.CP, c.node, c.cond); nc != nil && nc.Status == "True" {
			t.Logf("%s on the Node: %s %s", c.cond, nc.Status, nc.Reason)
			harness.Measure(t, "alert_condition_"+strings.ToLower(c.cond)+"_true_after_freeze", nc.LastTransitionTime.Sub(frozen))
		}
	}
	// the kubelet's own verdict on A, for comparison: Ready=False
	// ("container runtime is down") about two minutes in
	harness.Eventually(t, 3*time.Minute, "the kubelet to report node A NotReady", func() bool {
		ready := hangwatch.NodeCond(t, r.a.CP, r.a.K.Node, "Ready")
		return ready != nil && ready.Status == "False"
	})
	ready := hangwatch.NodeCond(t, r.a.CP, r.a.K.Node, "Ready")
	t.Logf("node A: Ready=False: %s", ready.Message)
	harness.Measure(t, "alert_kubelet_notready_after_freeze", ready.LastTransitionTime.Sub(frozen))
}

// dashboardQueriesReturnSeries evaluates every panel's query of the
// shipped dashboard, and its node variable's, as Grafana would with node
// a chosen, until each returns series.
func dashboardQueriesReturnSeries(t *testing.T, p *alerting.Prometheus, a, b string) {
	t.Helper()
	d, err := alerting.ReadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	// Grafana's $__rate_interval: four scrape intervals (15 s) at the least
	vars := strings.NewReplacer("$__rate_interval", "1m", "$node", a)
	queries := map[string]string{`hangwatch_build_info{job="hangwatch"}`: "the node variable (label_values of node)"}
	for _, panel := range d.Panels {
		for _, target := range panel.Targets {
			queries[vars.Replace(target.Expr)] = panel.Title
		}
	}
	empty := func() []string {
		var out []string
		for q, title := range queries {
			if s, err := p.Query(q); err != nil || len(s) == 0 {
				out = append(out, fmt.Sprintf("%q (%s): %d series, %v", title, q, len(s), err))
			}
		}
		return out
	}
	harness.Eventually(t, 2*time.Minute, "every dashboard query to return series", func() bool { return len(empty()) == 0 },
		harness.Explaining(func() string { return strings.Join(empty(), "\n") }))
	for q, title := range queries {
		s, _ := p.Query(q)
		t.Logf("dashboard %q: %d series from %s", title, len(s), q)
	}
	nodes, _ := p.Query(`count by (node) (hangwatch_build_info{job="hangwatch"})`)
	if len(nodes) != 2 {
		t.Errorf("the node variable offers %v, want %s and %s", nodes, a, b)
	}
}

package manifests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/test/harness/alerting"
)

func loadDashboard(t *testing.T) alerting.Dashboard {
	t.Helper()
	d, err := alerting.ReadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels: %+v", d)
	}
	return d
}

// grafanaVars stands Grafana's variables in for PromQL that parses.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$node", ".*")

// TestDashboardQueriesNameKnownMetrics checks every query names only
// metrics hangwatch exports (docs/metrics.md's table) or a real kubelet
// exports (the 1.34 captures in kubeletmetrics/testdata), and that
// promtool parses every query.
func TestDashboardQueriesNameKnownMetrics(t *testing.T) {
	d := loadDashboard(t)
	known := knownMetrics(t)
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
			for _, m := range metricNames(tg.Expr) {
				if !known[m] {
					t.Errorf("panel %q: %s is exported by neither hangwatch nor the kubelet", p.Title, m)
				}
			}
		}
	}
	groups, _ := prometheusRuleSpec(t)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			for _, m := range metricNames(r.Expr) {
				if !known[m] && m != "up" {
					t.Errorf("alert %s: %s is exported by neither hangwatch nor the kubelet", r.Alert, m)
				}
			}
		}
	}
	checkQueriesParse(t, exprs)
}

// checkQueriesParse has promtool check the queries as recording rules.
func checkQueriesParse(t *testing.T, exprs []string) {
	t.Helper()
	promtool := promtoolOrSkip(t)
	type recording struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []recording
	for i, e := range exprs {
		rules = append(rules, recording{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: grafanaVars.Replace(e)})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}

var (
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlBraces    = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlGroupings = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promqlKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames lists the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges and grouping label
// lists are removed, less functions (followed by a parenthesis) and
// keywords.
func metricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlBraces.ReplaceAllString(s, " ")
	s = promqlGroupings.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range promqlIdent.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promqlKeywords[strings.ToLower(m)] {
			continue
		}
		seen[m] = true
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// knownMetrics are hangwatch's (docs/metrics.md's table, with histogram
// series) and a real kubelet's (its 1.34 captures).
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	readme, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(hangwatch_[a-z0-9_]+)`").FindAllStringSubmatch(string(readme), -1) {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[m[1]+suffix] = true
		}
	}
	captures, err := filepath.Glob(filepath.Join("..", "kubeletmetrics", "testdata", "kubelet-1.34-*.prom"))
	if err != nil || len(captures) == 0 {
		t.Fatalf("no kubelet captures: %v", err)
	}
	for _, c := range captures {
		f, err := os.Open(c)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
				known[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
			}
		}
		f.Close()
	}
	return known
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.99, sum by (le, method) (rate(a_bucket{job="x", node=~"$node"}[5m]))) > on (instance) group_left (node) b_total{x="a{b}"} and time() - c`)
	if strings.Join(got, ",") != "a_bucket,b_total,c" {
		t.Errorf("metricNames: %v", got)
	}
}

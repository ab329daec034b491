package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/test/harness"
)

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroups struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []rule `json:"rules"`
	} `json:"groups"`
}

// prometheusRuleSpec is the PrometheusRule's spec: a Prometheus rules file.
func prometheusRuleSpec(t *testing.T) (ruleGroups, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       ruleGroups     `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(raw, &pr); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %s %s", pr.APIVersion, pr.Kind)
	}
	spec, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return pr.Spec, spec
}

// TestAlertsFollowTheMixinShape checks names, severities, annotations and
// that every runbook_url points at a section of docs/runbooks.md.
func TestAlertsFollowTheMixinShape(t *testing.T) {
	groups, _ := prometheusRuleSpec(t)
	runbooks, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			if !regexp.MustCompile(`^Hangwatch[A-Z][A-Za-z]+$`).MatchString(r.Alert) {
				t.Errorf("alert %q: names are CamelCase with the Hangwatch prefix", r.Alert)
			}
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s", r.Alert, a)
				}
			}
			anchor := "alert-name-" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/runbooks.md#"+anchor) {
				t.Errorf("%s: runbook_url %q", r.Alert, r.Annotations["runbook_url"])
			}
			// GitHub makes "## Alert Name: X" the anchor alert-name-x, as
			// kubernetes-mixin's runbook.md has it.
			if !strings.Contains(string(runbooks), "\n## Alert Name: "+r.Alert+"\n") {
				t.Errorf("%s: docs/runbooks.md has no section \"## Alert Name: %s\" (anchor %s)", r.Alert, r.Alert, anchor)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d alerts", n)
	}
}

// TestAlertsPromtool runs promtool check rules and promtool test rules on
// the PrometheusRule's spec, and checks that every alert has a test case
// where it fires and one where it does not.
func TestAlertsPromtool(t *testing.T) {
	promtool := promtoolOrSkip(t)
	groups, spec := prometheusRuleSpec(t)
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join("prometheus", "tests", "alerts-test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"hangwatch-rules.yaml": spec, "alerts-test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "hangwatch-rules.yaml"}, {"test", "rules", "alerts-test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
	fires, silent := alertCases(t, tests)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("%s: a firing case %v and a silent case %v are both needed", r.Alert, fires[r.Alert], silent[r.Alert])
			}
		}
	}
}

func alertCases(t *testing.T, tests []byte) (fires, silent map[string]bool) {
	t.Helper()
	var doc struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &doc); err != nil {
		t.Fatal(err)
	}
	fires, silent = map[string]bool{}, map[string]bool{}
	for _, tc := range doc.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	return fires, silent
}

func promtoolOrSkip(t *testing.T) string {
	t.Helper()
	return toolOrSkip(t, harness.Promtool)
}

// toolOrSkip finds a tool the test command builds: a test without it
// skips, but fails under CI.
func toolOrSkip(t *testing.T, find func() (string, error)) string {
	t.Helper()
	p, err := find()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}

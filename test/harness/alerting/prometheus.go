package alerting

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"sigs.k8s.io/yaml"
)

// PrometheusBinary finds Prometheus built by the setup command from the Go
// module pinned in hack/tools (the module promtool comes from).
func PrometheusBinary() (string, error) {
	return harness.CachedTool("prometheus", "HANGWATCH_PROMETHEUS", "hack/tools")
}

// OperatorEvaluationInterval is prometheus-operator's default for a
// Prometheus' evaluationInterval (and scrapeInterval), which a rule group
// without an interval of its own is evaluated at.
const OperatorEvaluationInterval = 30 * time.Second

// PrometheusSetup is what a test's Prometheus scrapes, evaluates and
// alerts to.
type PrometheusSetup struct {
	Jobs []ScrapeJob
	// RulesFile is a Prometheus rules file (PrometheusRuleFile).
	RulesFile string
	// Alertmanager is the host:port alerts are sent to; "" sends none.
	Alertmanager string
}

// Prometheus is a real Prometheus a test started, on a loopback port.
type Prometheus struct {
	*harness.Proc
	Base string
}

// StartPrometheus writes its configuration, starts Prometheus and waits
// until it is ready.
func StartPrometheus(t *testing.T, s PrometheusSetup) *Prometheus {
	t.Helper()
	bin, err := PrometheusBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yaml")
	raw, err := yaml.Marshal(s.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("prometheus.yaml:\n%s", raw)
	addr := harness.FreeAddr(t)
	p := &Prometheus{Base: "http://" + addr, Proc: harness.StartProc(t, "prometheus", harness.ProcOptions{Grace: 10 * time.Second}, bin,
		"--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)}
	harness.Eventually(t, time.Minute, "Prometheus ready", func() bool {
		code, _, err := harness.Get(p.Base + "/-/ready")
		return err == nil && code == 200
	}, harness.UnlessExited(p))
	return p
}

// config is the prometheus.yaml of s: the global intervals
// prometheus-operator sets by default.
func (s PrometheusSetup) config() map[string]any {
	interval := OperatorEvaluationInterval.String()
	c := map[string]any{
		"global": map[string]any{"scrape_interval": interval, "evaluation_interval": interval},
	}
	var jobs []any
	for _, j := range s.Jobs {
		jobs = append(jobs, j.config())
	}
	c["scrape_configs"] = jobs
	if s.RulesFile != "" {
		c["rule_files"] = []string{s.RulesFile}
	}
	if s.Alertmanager != "" {
		c["alerting"] = map[string]any{"alertmanagers": []any{
			map[string]any{"static_configs": []any{map[string]any{"targets": []string{s.Alertmanager}}}}}}
	}
	return c
}

// Series is one sample of a query's answer: its labels and value.
type Series struct {
	Metric map[string]string
	Value  string
}

// Query evaluates expr at the present instant through Prometheus' HTTP
// API.
func (p *Prometheus) Query(expr string) ([]Series, error) {
	code, body, err := harness.Get(p.Base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		return nil, fmt.Errorf("query %q: %d: %w: %s", expr, code, err, body)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %q: %d: %s", expr, code, answer.Error)
	}
	if answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, want a vector", expr, answer.Data.ResultType)
	}
	out := make([]Series, 0, len(answer.Data.Result))
	for _, r := range answer.Data.Result {
		s := Series{Metric: r.Metric}
		if len(r.Value) == 2 {
			s.Value = fmt.Sprint(r.Value[1])
		}
		out = append(out, s)
	}
	return out, nil
}

// Up is whether Prometheus' last scrape of every target of job succeeded.
func (p *Prometheus) Up(job string, targets int) bool {
	s, err := p.Query(fmt.Sprintf(`up{job=%q} == 1`, job))
	return err == nil && len(s) == targets
}

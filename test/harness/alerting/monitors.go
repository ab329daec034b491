package alerting

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"sigs.k8s.io/yaml"
)

// ScrapeJob is one scrape_config of a test's Prometheus: a job scraping
// static targets, each with its node label, as prometheus-operator's
// configuration from a PodMonitor scrapes the pods it selects.
type ScrapeJob struct {
	Name     string
	Scheme   string
	Path     string
	Interval time.Duration
	// TokenFile holds the bearer token it sends.
	TokenFile string
	// InsecureSkipVerify, else CAFile and ServerName check the target.
	InsecureSkipVerify bool
	CAFile, ServerName string
	// Targets maps each host:port to its node label.
	Targets map[string]string
}

func (j ScrapeJob) config() map[string]any {
	tls := map[string]any{"insecure_skip_verify": j.InsecureSkipVerify}
	if j.CAFile != "" {
		tls["ca_file"] = j.CAFile
	}
	if j.ServerName != "" {
		tls["server_name"] = j.ServerName
	}
	var static []any
	for target, node := range j.Targets {
		static = append(static, map[string]any{"targets": []string{target}, "labels": map[string]string{"node": node}})
	}
	c := map[string]any{
		"job_name": j.Name, "scheme": j.Scheme, "metrics_path": j.Path, "scrape_interval": j.Interval.String(),
		"tls_config": tls, "static_configs": static,
	}
	if j.TokenFile != "" {
		c["authorization"] = map[string]any{"type": "Bearer", "credentials_file": j.TokenFile}
	}
	return c
}

// podMonitor is the part of a PodMonitor the harness translates; decoding
// is strict, so a field added to the shipped one fails until it is
// translated here too.
type podMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       podMonitorSpec `json:"spec"`
}

type podMonitorSpec struct {
	JobLabel string `json:"jobLabel"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	PodMetricsEndpoints []podMetricsEndpoint `json:"podMetricsEndpoints"`
}

type podMetricsEndpoint struct {
	Port          string `json:"port"`
	Scheme        string `json:"scheme"`
	Path          string `json:"path"`
	Interval      string `json:"interval"`
	Authorization struct {
		Type        string `json:"type"`
		Credentials struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"credentials"`
	} `json:"authorization"`
	TLSConfig struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify"`
	} `json:"tlsConfig"`
	Relabelings []struct {
		SourceLabels []string `json:"sourceLabels"`
		TargetLabel  string   `json:"targetLabel"`
	} `json:"relabelings"`
}

// PodMonitorJob reads the shipped PodMonitor (manifests/prometheus/
// podmonitor.yaml) and returns the scrape job prometheus-operator makes
// of it: the job named by the pods' jobLabel, its scheme, path, interval
// and TLS, the ServiceAccount token of its authorization Secret (in
// tokenFile: this API server has no token controller to fill the Secret),
// and the node label its relabeling copies from the pod's node, for each
// target (host:port -> node).
func PodMonitorJob(t *testing.T, tokenFile string, targets map[string]string) ScrapeJob {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(harness.ModuleRoot(), "manifests", "prometheus", "podmonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pm podMonitor
	if err := yaml.UnmarshalStrict(raw, &pm); err != nil {
		t.Fatalf("podmonitor.yaml has what the harness does not translate: %v", err)
	}
	job, err := pm.job(tokenFile, targets)
	if err != nil {
		t.Fatalf("podmonitor.yaml: %v", err)
	}
	return job
}

func (pm podMonitor) job(tokenFile string, targets map[string]string) (ScrapeJob, error) {
	if pm.Kind != "PodMonitor" || len(pm.Spec.PodMetricsEndpoints) != 1 {
		return ScrapeJob{}, fmt.Errorf("want a PodMonitor with one endpoint, have %s with %d", pm.Kind, len(pm.Spec.PodMetricsEndpoints))
	}
	name := pm.Spec.Selector.MatchLabels[pm.Spec.JobLabel]
	e := pm.Spec.PodMetricsEndpoints[0]
	interval, err := time.ParseDuration(e.Interval)
	if err != nil {
		return ScrapeJob{}, fmt.Errorf("interval %q: %w", e.Interval, err)
	}
	if name == "" || e.Authorization.Type != "Bearer" || e.Authorization.Credentials.Name != "hangwatch-scraper-token" {
		return ScrapeJob{}, fmt.Errorf("job %q, authorization %+v: want the selected pods' %s label and hangwatch-scraper-token's bearer token", name, e.Authorization, pm.Spec.JobLabel)
	}
	for _, r := range e.Relabelings {
		if len(r.SourceLabels) != 1 || r.SourceLabels[0] != "__meta_kubernetes_pod_node_name" || r.TargetLabel != "node" {
			return ScrapeJob{}, fmt.Errorf("relabeling %+v: the harness copies only the pod's node name to node", r)
		}
	}
	return ScrapeJob{Name: name, Scheme: e.Scheme, Path: e.Path, Interval: interval, TokenFile: tokenFile,
		InsecureSkipVerify: e.TLSConfig.InsecureSkipVerify, Targets: targets}, nil
}

// PrometheusRuleFile writes the groups of the shipped PrometheusRule
// (manifests/prometheus/prometheusrule.yaml) as a Prometheus rules file,
// as prometheus-operator does, and returns its path.
func PrometheusRuleFile(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(harness.ModuleRoot(), "manifests", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &pr); err != nil || pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("prometheusrule.yaml: kind %q, %d groups, %v", pr.Kind, len(pr.Spec.Groups), err)
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hangwatch.rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

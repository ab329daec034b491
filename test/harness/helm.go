package harness

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// HelmMonitorsOn are the values that turn on the chart's optional
// prometheus-operator objects (PodMonitor, PrometheusRule).
var HelmMonitorsOn = []string{"--set", "podMonitor.enabled=true", "--set", "prometheusRule.enabled=true"}

// HelmTemplate renders manifests/helm/hangwatch with the helm the setup
// command built, as a release in kube-system for KubeVersion (helm's own
// default version is too old for the chart), and returns the YAML.
func HelmTemplate(release string, extra ...string) ([]byte, error) {
	helm, err := Helm()
	if err != nil {
		return nil, err
	}
	chart := filepath.Join(ModuleRoot(), "manifests", "helm", "hangwatch")
	args := append([]string{"template", release, chart, "--namespace", "kube-system", "--kube-version", KubeVersion}, extra...)
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

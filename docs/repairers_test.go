package docs

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// yamlBlockAfter is the first yaml block of page after heading.
func yamlBlockAfter(t *testing.T, page, heading string) []byte {
	t.Helper()
	i := strings.Index(page, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no heading %q", heading)
	}
	rest := page[i:]
	start := strings.Index(rest, "```yaml\n")
	if start < 0 {
		t.Fatalf("no yaml block after %q", heading)
	}
	rest = rest[start+len("```yaml\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("the yaml block after %q does not end", heading)
	}
	return []byte(rest[:end])
}

// ownedTypes are the conditions hangwatch writes with the GPU pack on.
func ownedTypes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, s := range conditions.DefaultSpecs() {
		out = append(out, s.Type)
	}
	gpu, err := kernellog.RulePack("gpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range gpu.Conditions {
		out = append(out, c.Type)
	}
	return out
}

// TestTheRepairersExamplesReadHangwatchsConditions: the NodeHealthCheck
// of docs/remediation.md's GPU faults and its NodeReadinessRule name
// conditions hangwatch writes, each with its bad status for the
// NodeHealthCheck (True) and its good one for the NodeReadinessRule
// (False: it lists what a ready node has), and a taint of
// node-readiness-controller's own prefix.
func TestTheRepairersExamplesReadHangwatchsConditions(t *testing.T) {
	page := readPage(t, "..", "docs/remediation.md")
	owned := ownedTypes(t)
	var nhc struct {
		Kind string `json:"kind"`
		Spec struct {
			UnhealthyConditions []struct{ Type, Status, Duration string } `json:"unhealthyConditions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(yamlBlockAfter(t, page, "## GPU faults"), &nhc); err != nil || nhc.Kind != "NodeHealthCheck" || len(nhc.Spec.UnhealthyConditions) == 0 {
		t.Fatalf("GPU faults' NodeHealthCheck: %+v, %v", nhc, err)
	}
	for _, c := range nhc.Spec.UnhealthyConditions {
		if !slices.Contains(owned, c.Type) || c.Status != "True" {
			t.Errorf("the GPU NodeHealthCheck acts on %s=%s: want a condition hangwatch writes, True", c.Type, c.Status)
		}
	}
	var nrr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Conditions []struct {
				Type           string `json:"type"`
				RequiredStatus string `json:"requiredStatus"`
			} `json:"conditions"`
			Taint           struct{ Key, Effect string } `json:"taint"`
			EnforcementMode string                       `json:"enforcementMode"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(yamlBlockAfter(t, page, "## node-readiness-controller"), &nrr); err != nil {
		t.Fatal(err)
	}
	if nrr.APIVersion != "readiness.node.x-k8s.io/v1alpha1" || nrr.Kind != "NodeReadinessRule" || len(nrr.Spec.Conditions) == 0 ||
		!strings.HasPrefix(nrr.Spec.Taint.Key, "readiness.k8s.io/") || nrr.Spec.Taint.Effect != "NoSchedule" || nrr.Spec.EnforcementMode != "continuous" {
		t.Fatalf("the NodeReadinessRule: %+v", nrr)
	}
	for _, c := range nrr.Spec.Conditions {
		if !slices.Contains(owned, c.Type) || c.RequiredStatus != "False" {
			t.Errorf("the NodeReadinessRule requires %s=%s: want a condition hangwatch writes, False", c.Type, c.RequiredStatus)
		}
	}
}

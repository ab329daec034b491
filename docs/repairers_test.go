package docs

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/remedy"
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

// TestTheKarpenterPolicyLoads: docs/remediation.md's hangwatch-remedy
// policy for Karpenter's GPU NodePools is one hangwatch-remedy accepts,
// and acts only on conditions hangwatch writes; the provider table names
// KernelDeadlock as the one hangwatch condition a provider (GCP) repairs.
func TestTheKarpenterPolicyLoads(t *testing.T) {
	page := readPage(t, "..", "docs/remediation.md")
	p, err := remedy.DecodePolicy(yamlBlockAfter(t, page, "## Karpenter's node repair"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := remedy.Validate(p); len(errs) != 0 {
		t.Fatal(errs)
	}
	owned := ownedTypes(t)
	for _, c := range p.Conditions {
		if !slices.Contains(owned, c.Type) {
			t.Errorf("the Karpenter policy acts on %s, which hangwatch does not write", c.Type)
		}
	}
	if got := p.EvictionFor("GPUUnavailable"); !slices.Contains(p.Conditions[0].EvictPodsUsing, remedy.GPUResource) || len(got.Kinds) == 0 {
		t.Errorf("the GPU condition's eviction: %+v", p.Conditions[0])
	}
	section := page[strings.Index(page, "## Karpenter's node repair"):]
	section = section[:strings.Index(section, "```yaml")]
	for _, row := range strings.Split(section, "\n") {
		if !strings.HasPrefix(row, "| GCP") && !strings.HasPrefix(row, "| AWS") && !strings.HasPrefix(row, "| Azure") {
			continue
		}
		acts := row[strings.LastIndex(strings.TrimSuffix(row, " |"), "|")+1:]
		for _, typ := range owned {
			if strings.Contains(acts, "`"+typ+"`") && typ != "KernelDeadlock" {
				t.Errorf("the table says a provider repairs %s: %s", typ, row)
			}
		}
	}
}

package conditions

import (
	"strings"
	"testing"
)

func TestWithLeaseShareReplacesOnlyTheNotRenewedProblem(t *testing.T) {
	specs := WithLeaseShare(DefaultSpecs(), 0.5)
	if err := CompileSpecs(specs); err != nil {
		t.Fatalf("the rules with a lease share do not compile: %v", err)
	}
	var reasons, whens []string
	for _, s := range specs {
		if s.Type != TypeKubeletUnresponsive {
			continue
		}
		for _, p := range s.Problems {
			reasons, whens = append(reasons, p.Reason), append(whens, p.When)
		}
	}
	if strings.Join(reasons, ",") != "KubeletNotAnswering,NodeLeaseMissing,NodeLeaseNotRenewed" || !strings.Contains(whens[2], "0.5 * lease.graceSeconds") {
		t.Fatalf("KubeletUnresponsive problems %v (%v), want KubeletNotAnswering, NodeLeaseMissing, then the share rule", reasons, whens)
	}
	for _, s := range DefaultSpecs() {
		if s.Type == TypeKubeletUnresponsive && strings.Contains(s.Problems[len(s.Problems)-1].When, "graceSeconds") {
			t.Fatal("WithLeaseShare changed the built-in specs it was given")
		}
	}
}

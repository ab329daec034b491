package remedy

import (
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hangwatch/hangwatch/internal/checksites"
)

// policyCase breaks one check of Validate on the default policy: the one
// problem it gives names the field path and the bad value. Problem * is
// another package's words (labels.Parse's), left unchecked.
type policyCase struct {
	path, value, problem string
	set                  func(p *Policy)
}

var policyCases = []policyCase{
	{"maxUnhealthy", "lots", "want a count or a percentage such as 20%", func(p *Policy) { p.MaxUnhealthy = intstr.FromString("lots") }},
	{"maxUnhealthy", "-1", "must not be negative", func(p *Policy) { p.MaxUnhealthy = intstr.FromInt32(-1) }},
	{"maxUnhealthy", "150%", "want a count or a percentage from 0% to 100%", func(p *Policy) { p.MaxUnhealthy = intstr.FromString("150%") }},
	{"maxActionsPerMinute", "0", "must be from 1 to 100 (the actions the budget's record keeps)", func(p *Policy) { p.MaxActionsPerMinute = 0 }},
	{"conditions[0].type", "Ready", "is the kubelet's (or, for Ready, True on every healthy node): remedy acts only on hangwatch's problem-polarity conditions", func(p *Policy) { p.Conditions[0].Type = "Ready" }},
	{"heartbeatPeriod", "5s", "must be at least 10s", func(p *Policy) { p.HeartbeatPeriod = metav1.Duration{Duration: 5 * time.Second} }},
	{"evictionConcurrency", "51", "must be from 1 to 50", func(p *Policy) { p.EvictionConcurrency = 51 }},
	{"nodeSelector", "pool in (a", "*", func(p *Policy) { p.NodeSelector = "pool in (a" }},
	{"conditions[0].type", "runtime-hung", "must be a CamelCase condition type", func(p *Policy) { p.Conditions[0].Type = "runtime-hung" }},
	{"conditions[1].type", "RuntimeHung", "is listed twice", func(p *Policy) { p.Conditions[1].Type = "RuntimeHung" }},
	{"conditions[2].taintAfter", "-1s", "must be from 0 to 24h", func(p *Policy) { p.Conditions[2].TaintAfter = dur(-time.Second) }},
	{"conditions[0].evictAfter", "25h0m0s", "must be from 0 to 24h", func(p *Policy) { p.Conditions[0].EvictAfter = dur(25 * time.Hour) }},
	{"conditions[0].clearAfter", "25h0m0s", "must be from 0 to 24h", func(p *Policy) { p.Conditions[0].ClearAfter = *dur(25 * time.Hour) }},
	{"conditions[0].writers[1]", `" "`, "must name a field manager, or * for any", func(p *Policy) { p.Conditions[0].Writers = []string{"hangwatch", " "} }},
	{"conditions[1].evictAfter", "1m0s", "needs taintAfter: pods evicted from an untainted node may land on it again", func(p *Policy) {
		p.Conditions[1].TaintAfter, p.Conditions[1].EvictAfter = nil, dur(time.Minute)
	}},
	{"conditions[1].evictAfter", "30s", "must not be shorter than taintAfter", func(p *Policy) { p.Conditions[1].EvictAfter = dur(30 * time.Second) }},
	{"conditions[4].evictPodsUsing[0]", `"gpu"`, "must be an extended resource name such as nvidia.com/gpu", func(p *Policy) {
		p.Conditions[4].EvictPodsUsing = []corev1.ResourceName{"gpu"}
	}},
	{"conditions[5].evictPodsUsing", "[nvidia.com/gpu]", "needs evictAfter: it narrows an eviction", func(p *Policy) {
		p.Conditions[5].EvictPodsUsing = []corev1.ResourceName{GPUResource}
	}},
	{"eviction.kinds[1]", `"DaemonSet"`, "a DaemonSet's pods are never evicted (the DaemonSet puts them back on the same node)", func(p *Policy) {
		p.Eviction.Kinds = []string{"ReplicaSet", "DaemonSet"}
	}},
	{"eviction.kinds[0]", `"statefulset"`, "must be a controller kind such as ReplicaSet, Job or StatefulSet, or None for pods with no controller", func(p *Policy) {
		p.Eviction.Kinds = []string{"statefulset"}
	}},
}

// TestEachPolicyCheckNamesItsFieldAndValue breaks each check alone on the
// default policy: Validate gives exactly its problem, naming the field
// path and the bad value.
func TestEachPolicyCheckNamesItsFieldAndValue(t *testing.T) {
	if errs := Validate(DefaultPolicy()); len(errs) != 0 {
		t.Fatalf("the default policy: %v", errs)
	}
	for _, c := range policyCases {
		t.Run(c.path+": "+c.problem, func(t *testing.T) {
			p := DefaultPolicy()
			c.set(p)
			want := fmt.Sprintf("%s %s: %s", c.path, c.value, c.problem)
			errs := Validate(p)
			if len(errs) != 1 || (errs[0].Error() != want && (c.problem != "*" || !strings.HasPrefix(errs[0].Error(), strings.TrimSuffix(want, "*")))) {
				t.Errorf("got %q, want only %q", errs, want)
			}
		})
	}
}

// TestEveryPolicyCheckHasACase reads Validate's checks from policy.go
// (each call of bad, a literal table's rows each) and wants a case for
// each, so a new check without one fails here; and each case for a check
// that is there.
func TestEveryPolicyCheckHasACase(t *testing.T) {
	cases := make([]checksites.Case, 0, len(policyCases))
	for _, c := range policyCases {
		cases = append(cases, checksites.Case{Path: c.path, Problem: c.problem})
	}
	sites := checksites.RequireCases(t, "policy.go", "bad", 0, 2, cases)
	t.Logf("%d checks", len(sites))
}

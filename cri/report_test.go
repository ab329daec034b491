package cri

import (
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func call(method string, d time.Duration, class Class) CallResult {
	return CallResult{Method: method, Duration: d, Class: class}
}

func TestReportVerdicts(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		calls  []CallResult
		want   Verdict
		reason string
	}{
		{"healthy", []CallResult{call(MethodVersion, ms, ClassOK), call(MethodStatus, 2*ms, ClassOK)}, VerdictHealthy, ""},
		{"slow", []CallResult{call(MethodVersion, ms, ClassOK), call(MethodListContainers, 1500*ms, ClassSlow)}, VerdictDegraded, "ListContainers slow: 1 of 1 calls over 1s"},
		{"too large", []CallResult{call(MethodVersion, ms, ClassOK), {Method: MethodListContainers, Class: ClassTooLarge, Err: "larger than max"}}, VerdictDegraded, "response too large"},
		{"hung beats errors", []CallResult{call(MethodVersion, 2*time.Second, ClassTimeout), {Method: MethodStatus, Class: ClassError, Err: "x"}}, VerdictHung, "Version did not answer within 2s (1 of 1 calls)"},
		{"unreachable", []CallResult{{Method: MethodVersion, Class: ClassUnreachable, Err: "connect: no such file"}, {Method: MethodStatus, Class: ClassUnreachable, Err: "connect: no such file"}}, VerdictUnreachable, "no CRI call reached the runtime: connect: no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(Endpoint{Address: "unix:///x"}, DefaultConfig(), []Cycle{{Calls: tc.calls, Sandboxes: -1, Containers: -1}}, nil)
			if r.Verdict != tc.want {
				t.Fatalf("verdict = %s (%v), want %s", r.Verdict, r.Reasons, tc.want)
			}
			if tc.reason != "" && !strings.Contains(strings.Join(r.Reasons, "\n"), tc.reason) {
				t.Fatalf("reasons = %q, want one containing %q", r.Reasons, tc.reason)
			}
		})
	}
}

func TestReportStatsAcrossSamples(t *testing.T) {
	var cycles []Cycle
	for i := 1; i <= 100; i++ {
		cycles = append(cycles, Cycle{Sandboxes: 3, Containers: 6, Calls: []CallResult{
			{Method: MethodListContainers, Duration: time.Duration(i) * time.Millisecond, Class: ClassOK, ResponseBytes: 1000 + i}}})
	}
	r := NewReport(Endpoint{}, DefaultConfig(), cycles, nil)
	st := r.Calls[0]
	if st.Count != 100 || st.P50Seconds != 0.05 || st.P99Seconds != 0.099 || st.MaxSeconds != 0.1 {
		t.Fatalf("stats = %+v, want count 100, p50 0.05, p99 0.099, max 0.1", st)
	}
	if r.LargestResponse.Bytes != 1100 || r.Sandboxes != 3 || r.Containers != 6 {
		t.Fatalf("largest = %+v, counts %d/%d", r.LargestResponse, r.Sandboxes, r.Containers)
	}
}

func TestReportWarnsNearTheMessageLimit(t *testing.T) {
	c := Cycle{Calls: []CallResult{{Method: MethodListContainers, Class: ClassOK, ResponseBytes: 15 << 20}}}
	r := NewReport(Endpoint{}, DefaultConfig(), []Cycle{c}, nil)
	if r.Verdict != VerdictDegraded || !strings.Contains(strings.Join(r.Reasons, " "), "94% of the 16777216-byte gRPC limit") {
		t.Fatalf("verdict %s reasons %q", r.Verdict, r.Reasons)
	}
}

// TestOnlyRequiredRuntimeConditionsDegrade: containerd 2.2+ reports
// ContainerdHasNoDeprecationWarnings=false on a healthy node (cgroup v1,
// say); the kubelet ignores it, and so does the verdict. The table still
// shows it, marked as information.
func TestOnlyRequiredRuntimeConditionsDegrade(t *testing.T) {
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
		{Type: "ContainerdHasNoDeprecationWarnings", Status: false, Reason: "ContainerdHasDeprecationWarnings", Message: "cgroup v1"},
	}}}
	conds := runtimeConditions(resp)
	c := Cycle{Conditions: conds, Calls: []CallResult{call(MethodStatus, time.Millisecond, ClassOK)}}
	r := NewReport(Endpoint{}, DefaultConfig(), []Cycle{c}, nil)
	if r.Verdict != VerdictHealthy {
		t.Fatalf("verdict %s (%q), want Healthy", r.Verdict, r.Reasons)
	}
	var table strings.Builder
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "ContainerdHasNoDeprecationWarnings=false (information)") {
		t.Fatalf("table does not show the informational condition:\n%s", table.String())
	}
	if got := c.Observation(time.Second).RuntimeNotReady; len(got) != 0 {
		t.Fatalf("runtimeNotReady = %v, want none", got)
	}
	conds[1].Status = false
	r = NewReport(Endpoint{}, DefaultConfig(), []Cycle{{Conditions: conds, Calls: c.Calls}}, nil)
	if r.Verdict != VerdictDegraded || !strings.Contains(strings.Join(r.Reasons, " "), "NetworkReady=false") {
		t.Fatalf("NetworkReady=false: verdict %s (%q), want Degraded naming it", r.Verdict, r.Reasons)
	}
	if got := (Cycle{Conditions: conds}).Observation(time.Second).RuntimeNotReady; len(got) != 1 || got[0] != "NetworkReady" {
		t.Fatalf("runtimeNotReady = %v, want [NetworkReady]", got)
	}
}

package diag

import (
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/cri"
)

func call(method string, d time.Duration, class cri.Class) cri.CallResult {
	return cri.CallResult{Method: method, Duration: d, Class: class}
}

func TestReportVerdicts(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		calls  []cri.CallResult
		want   Verdict
		reason string
	}{
		{"healthy", []cri.CallResult{call(cri.MethodVersion, ms, cri.ClassOK), call(cri.MethodStatus, 2*ms, cri.ClassOK)}, VerdictHealthy, ""},
		{"slow", []cri.CallResult{call(cri.MethodVersion, ms, cri.ClassOK), call(cri.MethodListContainers, 1500*ms, cri.ClassSlow)}, VerdictDegraded, "ListContainers slow: 1 of 1 calls over 1s"},
		{"too large", []cri.CallResult{call(cri.MethodVersion, ms, cri.ClassOK), {Method: cri.MethodListContainers, Class: cri.ClassTooLarge, Err: "larger than max"}}, VerdictDegraded, "response too large"},
		{"hung beats errors", []cri.CallResult{call(cri.MethodVersion, 2*time.Second, cri.ClassTimeout), {Method: cri.MethodStatus, Class: cri.ClassError, Err: "x"}}, VerdictHung, "Version did not answer within 2s (1 of 1 calls)"},
		{"unreachable", []cri.CallResult{{Method: cri.MethodVersion, Class: cri.ClassUnreachable, Err: "connect: no such file"}, {Method: cri.MethodStatus, Class: cri.ClassUnreachable, Err: "connect: no such file"}}, VerdictUnreachable, "no CRI call reached the runtime: connect: no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newCRIReport(cri.Endpoint{Address: "unix:///x"}, cri.DefaultConfig(), []cri.Cycle{{Calls: tc.calls, Sandboxes: -1, Containers: -1}}, nil)
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
	var cycles []cri.Cycle
	for i := 1; i <= 100; i++ {
		cycles = append(cycles, cri.Cycle{Sandboxes: 3, Containers: 6, Calls: []cri.CallResult{
			{Method: cri.MethodListContainers, Duration: time.Duration(i) * time.Millisecond, Class: cri.ClassOK, ResponseBytes: 1000 + i}}})
	}
	r := newCRIReport(cri.Endpoint{}, cri.DefaultConfig(), cycles, nil)
	st := r.Calls[0]
	if st.Count != 100 || st.P50Seconds != 0.05 || st.P99Seconds != 0.099 || st.MaxSeconds != 0.1 {
		t.Fatalf("stats = %+v, want count 100, p50 0.05, p99 0.099, max 0.1", st)
	}
	if r.LargestResponse.Bytes != 1100 || r.Sandboxes != 3 || r.Containers != 6 {
		t.Fatalf("largest = %+v, counts %d/%d", r.LargestResponse, r.Sandboxes, r.Containers)
	}
}

func TestReportWarnsNearTheMessageLimit(t *testing.T) {
	c := cri.Cycle{Calls: []cri.CallResult{{Method: cri.MethodListContainers, Class: cri.ClassOK, ResponseBytes: 15 << 20}}}
	r := newCRIReport(cri.Endpoint{}, cri.DefaultConfig(), []cri.Cycle{c}, nil)
	if r.Verdict != VerdictDegraded || !strings.Contains(strings.Join(r.Reasons, " "), "94% of the 16777216-byte gRPC limit") {
		t.Fatalf("verdict %s reasons %q", r.Verdict, r.Reasons)
	}
}

// TestOnlyRequiredRuntimeConditionsDegrade: containerd 2.2+ reports
// ContainerdHasNoDeprecationWarnings=false on a healthy node (cgroup v1,
// say); the kubelet ignores it, and so does the verdict. The table still
// shows it, marked as information.
func TestOnlyRequiredRuntimeConditionsDegrade(t *testing.T) {
	conds := []cri.RuntimeCondition{{Type: "RuntimeReady", Status: true, Required: true}, {Type: "NetworkReady", Status: true, Required: true},
		{Type: "ContainerdHasNoDeprecationWarnings", Status: false, Reason: "ContainerdHasDeprecationWarnings", Message: "cgroup v1"}}
	c := cri.Cycle{Conditions: conds, Calls: []cri.CallResult{call(cri.MethodStatus, time.Millisecond, cri.ClassOK)}}
	r := newCRIReport(cri.Endpoint{}, cri.DefaultConfig(), []cri.Cycle{c}, nil)
	if r.Verdict != VerdictHealthy {
		t.Fatalf("verdict %s (%q), want Healthy", r.Verdict, r.Reasons)
	}
	var table strings.Builder
	if err := writeCRITable(&table, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "ContainerdHasNoDeprecationWarnings=false (information)") {
		t.Fatalf("table does not show the informational condition:\n%s", table.String())
	}
	conds[1].Status = false
	r = newCRIReport(cri.Endpoint{}, cri.DefaultConfig(), []cri.Cycle{{Conditions: conds, Calls: c.Calls}}, nil)
	if r.Verdict != VerdictDegraded || !strings.Contains(strings.Join(r.Reasons, " "), "NetworkReady=false") {
		t.Fatalf("NetworkReady=false: verdict %s (%q), want Degraded naming it", r.Verdict, r.Reasons)
	}
}

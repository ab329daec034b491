package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

type diagJSON struct {
	Verdict  string   `json:"verdict"`
	Reasons  []string `json:"reasons"`
	Endpoint string   `json:"endpoint"`
	Runtime  struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"runtime"`
	Calls []struct {
		Method     string  `json:"method"`
		Count      int     `json:"count"`
		P50Seconds float64 `json:"p50Seconds"`
		P99Seconds float64 `json:"p99Seconds"`
		MaxSeconds float64 `json:"maxSeconds"`
		Errors     int     `json:"errors"`
		Timeouts   int     `json:"timeouts"`
		// FirstMessageP50Seconds is set for list streams only.
		FirstMessageP50Seconds *float64 `json:"firstMessageP50Seconds"`
		MaxResponseBytes       int      `json:"maxResponseBytes"`
	} `json:"calls"`
	ListStreaming     string `json:"listStreaming"`
	RuntimeConditions []struct {
		Type     string `json:"type"`
		Status   bool   `json:"status"`
		Required bool   `json:"required"`
	} `json:"runtimeConditions"`
	Sandboxes  int      `json:"sandboxes"`
	Containers int      `json:"containers"`
	PLEG       plegJSON `json:"pleg"`
	PodStarts  *struct {
		Verdict string `json:"verdict"`
		Waits   []struct {
			Pod           string  `json:"pod"`
			Container     string  `json:"container"`
			Step          string  `json:"step"`
			WaitedSeconds float64 `json:"waitedSeconds"`
		} `json:"waits"`
		Error string `json:"error"`
	} `json:"podStarts"`
}

// runDiag runs `hangwatch diag -o json` and returns the report, exit code
// and wall time.
func runDiag(t *testing.T, endpoint string, extra ...string) (diagJSON, int, time.Duration) {
	t.Helper()
	args := append([]string{"diag", "-r", endpoint, "-t", hangwatch.ProbeTimeout.String(), "-o", "json"}, extra...)
	start := time.Now()
	stdout, stderr, code, err := harness.Run(hangwatch.HangwatchBin, args...)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("run diag: %v", err)
	}
	var r diagJSON
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("diag output is not JSON: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return r, code, elapsed
}

func TestDiagHealthyRuntime(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	r, code, elapsed := runDiag(t, c.Endpoint, "--samples", "3")
	harness.Measure(t, "diag_healthy_3_samples", elapsed)
	if code != 0 || r.Verdict != "Healthy" {
		t.Fatalf("exit %d verdict %s (%v), want 0 Healthy", code, r.Verdict, r.Reasons)
	}
	if r.Sandboxes != hangwatch.SharedPods || r.Containers != hangwatch.SharedCtrs {
		t.Fatalf("counts = %d sandboxes, %d containers; want %d, %d", r.Sandboxes, r.Containers, hangwatch.SharedPods, hangwatch.SharedCtrs)
	}
	if r.Runtime.Name != "containerd" || r.Runtime.Version == "" || r.Endpoint != c.Endpoint {
		t.Fatalf("runtime %+v endpoint %s", r.Runtime, r.Endpoint)
	}
	seen := map[string]int{}
	for _, call := range r.Calls {
		seen[call.Method] = call.Count
		if call.Errors != 0 || call.Timeouts != 0 || call.MaxSeconds <= 0 || call.P50Seconds > call.P99Seconds {
			t.Errorf("%+v: want no errors or timeouts and ordered quantiles", call)
		}
	}
	for _, m := range []string{"Version", "Status", "ListPodSandbox", "ListContainers", "ImageFsInfo"} {
		if seen[m] != 3 {
			t.Errorf("%s called %d times over 3 samples, want 3", m, seen[m])
		}
	}
	if seen["PodSandboxStatus"] == 0 || seen["ContainerStatus"] == 0 {
		t.Errorf("per-object calls missing: %v", seen)
	}
}

func TestDiagFrozenRuntimeIsHung(t *testing.T) {
	harness.Parallel(t, harness.LaneSharedContainerd)
	c := hangwatch.SharedContainerd(t)
	harness.Freeze(t, c)
	r, code, elapsed := runDiag(t, c.Endpoint)
	harness.Measure(t, "diag_frozen_verdict", elapsed)
	if code != 1 || r.Verdict != "Hung" {
		t.Fatalf("exit %d verdict %s (%v), want 1 Hung", code, r.Verdict, r.Reasons)
	}
	if elapsed > hangwatch.ProbeTimeout+hangwatch.GenerousSlack {
		t.Fatalf("diag took %v against a frozen runtime, want about %v", elapsed, hangwatch.ProbeTimeout+time.Second)
	}
	for _, call := range r.Calls {
		if call.Timeouts != 1 {
			t.Errorf("%s: %d timeouts, want 1", call.Method, call.Timeouts)
		}
	}
	if r.PLEG.Verdict != "Unhealthy" || r.PLEG.Reason != "RelistStalled" {
		t.Errorf("pleg: %s %s %+v, want Unhealthy RelistStalled (our relist stuck past -t)", r.PLEG.Verdict, r.PLEG.Reason, r.PLEG.Signals)
	}
}

// plegJSON is diag's documented pleg.* keys.
type plegJSON struct {
	Verdict               string   `json:"verdict"`
	Reason                string   `json:"reason"`
	LastSeenAgeSeconds    *float64 `json:"lastSeenAgeSeconds"`
	RelistP99Seconds      *float64 `json:"relistP99Seconds"`
	EmulatedRelistSeconds *float64 `json:"emulatedRelistSeconds"`
	EventedPLEG           bool     `json:"eventedPLEG"`
	KubeletVersion        string   `json:"kubeletVersion"`
	Signals               []struct {
		Name, State, Detail string
	} `json:"signals"`
}

func (p plegJSON) signal(name string) struct{ Name, State, Detail string } {
	for _, s := range p.Signals {
		if s.Name == name {
			return s
		}
	}
	return struct{ Name, State, Detail string }{}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

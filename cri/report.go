package cri

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Verdict is diag's one-word answer.
type Verdict string

// The verdicts, from best to worst.
const (
	VerdictHealthy     Verdict = "Healthy"
	VerdictDegraded    Verdict = "Degraded"
	VerdictHung        Verdict = "Hung"
	VerdictUnreachable Verdict = "Unreachable"
)

// largeResponseShare of MaxMessageSize makes a list response worth a warning.
const largeResponseShare = 0.75

// MethodStats summarizes the calls of one method. The JSON keys are stable.
type MethodStats struct {
	Method           string  `json:"method"`
	Count            int     `json:"count"`
	P50Seconds       float64 `json:"p50Seconds"`
	P99Seconds       float64 `json:"p99Seconds"`
	MaxSeconds       float64 `json:"maxSeconds"`
	Errors           int     `json:"errors"`
	Timeouts         int     `json:"timeouts"`
	Slow             int     `json:"slow"`
	MaxResponseBytes int     `json:"maxResponseBytes"`
	// FirstMessage* time a list stream's first message; absent for unary calls.
	FirstMessageP50Seconds *float64 `json:"firstMessageP50Seconds,omitempty"`
	FirstMessageMaxSeconds *float64 `json:"firstMessageMaxSeconds,omitempty"`
}

// ResponseSize is the largest response seen, against the gRPC limit.
type ResponseSize struct {
	Method     string `json:"method"`
	Bytes      int    `json:"bytes"`
	LimitBytes int    `json:"limitBytes"`
}

// InFlightCall is a call still out when the report was made.
type InFlightCall struct {
	Method     string  `json:"method"`
	Object     string  `json:"object,omitempty"`
	AgeSeconds float64 `json:"ageSeconds"`
}

// Report is diag's output. The JSON keys are stable and documented.
type Report struct {
	Verdict           Verdict            `json:"verdict"`
	Reasons           []string           `json:"reasons"`
	Endpoint          string             `json:"endpoint"`
	EndpointSource    string             `json:"endpointSource"`
	TimeoutSeconds    float64            `json:"timeoutSeconds"`
	Runtime           RuntimeInfo        `json:"runtime"`
	RuntimeConditions []RuntimeCondition `json:"runtimeConditions"`
	ListStreaming     Streaming          `json:"listStreaming"`
	Samples           int                `json:"samples"`
	Calls             []MethodStats      `json:"calls"`
	Sandboxes         int                `json:"sandboxes"`
	Containers        int                `json:"containers"`
	LargestResponse   ResponseSize       `json:"largestResponse"`
	InFlight          []InFlightCall     `json:"inFlight"`
}

// NewReport summarizes cycles (oldest first) probed against ep, with the
// calls still out at the end.
func NewReport(ep Endpoint, cfg Config, cycles []Cycle, inflight []InFlight) Report {
	r := Report{Endpoint: ep.Address, EndpointSource: ep.Source, TimeoutSeconds: cfg.Timeout.Seconds(),
		Samples: len(cycles), Sandboxes: -1, Containers: -1, Reasons: []string{}, ListStreaming: StreamingUnknown,
		LargestResponse: ResponseSize{LimitBytes: MaxMessageSize}, InFlight: []InFlightCall{}}
	byMethod := map[string][]CallResult{}
	for _, c := range cycles {
		for _, call := range c.Calls {
			byMethod[call.Method] = append(byMethod[call.Method], call)
		}
		if c.Runtime.Name != "" {
			r.Runtime = c.Runtime
		}
		if c.Conditions != nil {
			r.RuntimeConditions = c.Conditions
		}
		if c.Streaming != "" {
			r.ListStreaming = c.Streaming
		}
		if c.Sandboxes >= 0 {
			r.Sandboxes = c.Sandboxes
		}
		if c.Containers >= 0 {
			r.Containers = c.Containers
		}
	}
	for _, m := range Methods {
		calls := byMethod[m]
		if len(calls) == 0 {
			continue
		}
		st := methodStats(m, calls)
		r.Calls = append(r.Calls, st)
		if st.MaxResponseBytes > r.LargestResponse.Bytes {
			r.LargestResponse.Method, r.LargestResponse.Bytes = m, st.MaxResponseBytes
		}
	}
	for _, f := range inflight {
		r.InFlight = append(r.InFlight, InFlightCall{Method: f.Method, Object: f.Object, AgeSeconds: roundSeconds(f.Age)})
	}
	r.Verdict, r.Reasons = verdict(cfg, byMethod, r)
	return r
}

func methodStats(method string, calls []CallResult) MethodStats {
	st := MethodStats{Method: method, Count: len(calls)}
	ds := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		ds = append(ds, c.Duration)
		switch {
		case c.Class == ClassTimeout:
			st.Timeouts++
		case c.Class == ClassSlow:
			st.Slow++
		case c.Class.IsFailure():
			st.Errors++
		}
		if c.ResponseBytes > st.MaxResponseBytes {
			st.MaxResponseBytes = c.ResponseBytes
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	st.FirstMessageP50Seconds, st.FirstMessageMaxSeconds = firstMessageStats(calls)
	st.P50Seconds = roundSeconds(quantile(ds, 0.5))
	st.P99Seconds = roundSeconds(quantile(ds, 0.99))
	st.MaxSeconds = roundSeconds(ds[len(ds)-1])
	return st
}

// firstMessageStats are the median and largest time to a stream's first
// message, over the calls that got one; nil for unary calls.
func firstMessageStats(calls []CallResult) (p50, most *float64) {
	var ds []time.Duration
	for _, c := range calls {
		if c.FirstMessage > 0 {
			ds = append(ds, c.FirstMessage)
		}
	}
	if len(ds) == 0 {
		return nil, nil
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	a, b := roundSeconds(quantile(ds, 0.5)), roundSeconds(ds[len(ds)-1])
	return &a, &b
}

// quantile is the nearest-rank quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func roundSeconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1e6) / 1e6
}

// verdict is the worst thing seen, with one reason per problem.
func verdict(cfg Config, byMethod map[string][]CallResult, r Report) (Verdict, []string) {
	v := VerdictHealthy
	reasons := []string{}
	worse := func(to Verdict, reason string) {
		if rank(to) > rank(v) {
			v = to
		}
		reasons = append(reasons, reason)
	}
	if err, ok := allUnreachable(byMethod); ok {
		return VerdictUnreachable, []string{"no CRI call reached the runtime: " + err}
	}
	for _, m := range Methods {
		for _, reason := range methodProblems(cfg, m, byMethod[m]) {
			worse(reason.verdict, reason.text)
		}
	}
	for _, c := range r.RuntimeConditions {
		if c.Required && !c.Status {
			worse(VerdictDegraded, fmt.Sprintf("runtime reports %s=false (%s: %s)", c.Type, c.Reason, c.Message))
		}
	}
	if float64(r.LargestResponse.Bytes) >= largeResponseShare*MaxMessageSize {
		worse(VerdictDegraded, fmt.Sprintf("%s response is %d bytes, %.0f%% of the %d-byte gRPC limit",
			r.LargestResponse.Method, r.LargestResponse.Bytes, 100*float64(r.LargestResponse.Bytes)/MaxMessageSize, MaxMessageSize))
	}
	return v, reasons
}

// allUnreachable reports whether every call was unreachable, with an error.
func allUnreachable(byMethod map[string][]CallResult) (string, bool) {
	last := ""
	for _, calls := range byMethod {
		for _, c := range calls {
			if c.Class != ClassUnreachable {
				return "", false
			}
			last = c.Err
		}
	}
	return last, last != ""
}

func rank(v Verdict) int {
	switch v {
	case VerdictDegraded:
		return 1
	case VerdictHung:
		return 2
	case VerdictUnreachable:
		return 3
	}
	return 0
}

type problem struct {
	verdict Verdict
	text    string
}

// methodProblems names what went wrong with one method's calls.
func methodProblems(cfg Config, method string, calls []CallResult) []problem {
	counts := map[Class]int{}
	lastErr := map[Class]CallResult{}
	for _, c := range calls {
		counts[c.Class]++
		lastErr[c.Class] = c
	}
	var out []problem
	if n := counts[ClassTimeout]; n > 0 {
		c := lastErr[ClassTimeout]
		what := method
		if c.Object != "" {
			what = fmt.Sprintf("%s of %s", method, shortID(c.Object))
		}
		out = append(out, problem{VerdictHung, fmt.Sprintf("%s did not answer within %v (%d of %d calls)", what, cfg.Timeout, n, len(calls))})
	}
	for _, cl := range []Class{ClassUnreachable, ClassTooLarge, ClassError} {
		if n := counts[cl]; n > 0 {
			out = append(out, problem{VerdictDegraded, fmt.Sprintf("%s %s (%d of %d calls): %s", method, classText(cl), n, len(calls), lastErr[cl].Err)})
		}
	}
	if n := counts[ClassSlow]; n > 0 {
		out = append(out, problem{VerdictDegraded, fmt.Sprintf("%s slow: %d of %d calls over %v", method, n, len(calls), cfg.SlowThreshold)})
	}
	return out
}

func classText(c Class) string {
	switch c {
	case ClassUnreachable:
		return "unreachable"
	case ClassTooLarge:
		return "response too large"
	}
	return "failed"
}

// shortID shortens a runtime ID the way crictl prints it.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

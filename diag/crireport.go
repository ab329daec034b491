package diag

import (
	"math"
	"sort"
	"time"

	"github.com/hangwatch/hangwatch/cri"
)

// largeResponseShare of cri.MaxMessageSize makes a list response worth a warning.
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

// CRIReport is the CRI part of diag's output, inlined in Report. The JSON
// keys are stable and documented.
type CRIReport struct {
	Verdict           Verdict                `json:"verdict"`
	Reasons           []string               `json:"reasons"`
	Endpoint          string                 `json:"endpoint"`
	EndpointSource    string                 `json:"endpointSource"`
	TimeoutSeconds    float64                `json:"timeoutSeconds"`
	Runtime           cri.RuntimeInfo        `json:"runtime"`
	RuntimeConditions []cri.RuntimeCondition `json:"runtimeConditions"`
	ListStreaming     cri.Streaming          `json:"listStreaming"`
	Samples           int                    `json:"samples"`
	Calls             []MethodStats          `json:"calls"`
	Sandboxes         int                    `json:"sandboxes"`
	Containers        int                    `json:"containers"`
	LargestResponse   ResponseSize           `json:"largestResponse"`
	InFlight          []InFlightCall         `json:"inFlight"`
}

// newCRIReport summarizes cycles (oldest first) probed against ep, with the
// calls still out at the end.
func newCRIReport(ep cri.Endpoint, cfg cri.Config, cycles []cri.Cycle, inflight []cri.InFlight) CRIReport {
	r := CRIReport{Endpoint: ep.Address, EndpointSource: ep.Source, TimeoutSeconds: cfg.Timeout.Seconds(),
		Samples: len(cycles), Sandboxes: -1, Containers: -1, Reasons: []string{}, ListStreaming: cri.StreamingUnknown,
		LargestResponse: ResponseSize{LimitBytes: cri.MaxMessageSize}, InFlight: []InFlightCall{}}
	byMethod := map[string][]cri.CallResult{}
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
	for _, m := range cri.Methods {
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

func methodStats(method string, calls []cri.CallResult) MethodStats {
	st := MethodStats{Method: method, Count: len(calls)}
	ds := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		ds = append(ds, c.Duration)
		switch {
		case c.Class == cri.ClassTimeout:
			st.Timeouts++
		case c.Class == cri.ClassSlow:
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
func firstMessageStats(calls []cri.CallResult) (p50, most *float64) {
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

package kubeletmetrics

import (
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Timing is one duration metric, normalized to seconds whatever generation
// exposed it. A histogram (1.14 on) is preferred; the microsecond summaries
// of up to 1.17 give Quantiles and Sum/Count only.
type Timing struct {
	// Source is the metric family it was read from.
	Source    string
	Histogram *Histogram
	// Quantiles are a summary's own quantiles (over the kubelet's summary
	// window), in seconds; NaN quantiles (no recent observations) are left out.
	Quantiles map[float64]float64
	Sum       float64
	Count     float64
}

// Present reports whether the kubelet exposed this timing at all.
func (t *Timing) Present() bool { return t != nil && t.Source != "" }

// Operation is one kubelet_runtime_operations_* operation_type.
type Operation struct {
	Total    float64
	Errors   float64
	Duration Timing
}

// Evented are the Evented PLEG metrics (1.26 on).
type Evented struct {
	Present          bool
	ConnectionErrors float64
	ConnectionOK     float64
	Latency          Timing
}

// Snapshot is one scrape, normalized.
type Snapshot struct {
	// LastSeen is kubelet_pleg_last_seen_seconds; zero when absent (before
	// 1.18) or before the first successful relist.
	LastSeen       time.Time
	HasLastSeen    bool
	Relist         Timing // kubelet_pleg_relist_duration_seconds or _latency_microseconds
	RelistInterval Timing
	PodRelist      Timing // kubelet_pleg_pod_relist_duration_seconds (1.36 on)
	DiscardEvents  float64
	HasDiscard     bool
	Evented        Evented
	Operations     map[string]*Operation // by operation_type
	Generation     Generation
	// Build is the kubelet's version, from kubernetes_build_info.
	Build Build
	// Gates are the feature gates read (GateEventedPLEG,
	// GateCRIListStreaming) as kubernetes_feature_enabled reports them;
	// nil when the kubelet does not export that family (before 1.26).
	Gates map[string]bool
	// Puts are the kubelet's PUTs to the API server: its Lease renewals.
	Puts Puts
}

const usPerSecond = 1e6

func fromFamilies(fams map[string]*family) *Snapshot {
	s := &Snapshot{Operations: map[string]*Operation{}}
	if f := fams["kubelet_pleg_last_seen_seconds"]; f != nil && len(f.Metric) > 0 {
		if v := scalar(f.Metric[0]); v > 0 {
			sec, frac := math.Modf(v)
			s.LastSeen, s.HasLastSeen = time.Unix(int64(sec), int64(frac*1e9)), true
		}
	}
	s.Relist = timing(fams, "kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_latency_microseconds")
	s.RelistInterval = timing(fams, "kubelet_pleg_relist_interval_seconds", "kubelet_pleg_relist_interval_microseconds")
	s.PodRelist = timing(fams, "kubelet_pleg_pod_relist_duration_seconds", "")
	if f := fams["kubelet_pleg_discard_events"]; f != nil && len(f.Metric) > 0 {
		s.DiscardEvents, s.HasDiscard = scalar(f.Metric[0]), true
	}
	s.Evented = evented(fams)
	s.readOperations(fams)
	s.Build, s.Gates = readBuild(fams), readGates(fams)
	s.Puts = readPuts(fams)
	s.Generation = detectGeneration(fams)
	if s.Build.AtLeast(1, 37) {
		s.Generation = GenEventedHints
	}
	return s
}

// timing reads the seconds histogram if present, else the microsecond summary.
func timing(fams map[string]*family, seconds, micro string) Timing {
	if f := fams[seconds]; f != nil && len(f.Metric) > 0 {
		return fromMetric(seconds, f.Metric[0], 1)
	}
	if f := fams[micro]; micro != "" && f != nil && len(f.Metric) > 0 {
		return fromMetric(micro, f.Metric[0], usPerSecond)
	}
	return Timing{}
}

// fromMetric reads a histogram or summary sample, dividing values by scale.
func fromMetric(source string, m *dto.Metric, scale float64) Timing {
	t := Timing{Source: source}
	switch {
	case m.Histogram != nil:
		h := m.GetHistogram()
		out := &Histogram{Count: float64(h.GetSampleCount()), Sum: h.GetSampleSum() / scale}
		for _, b := range h.GetBucket() {
			out.Buckets = append(out.Buckets, Bucket{UpperBound: b.GetUpperBound() / scale, Count: float64(b.GetCumulativeCount())})
		}
		out.Buckets = sortBuckets(out.Buckets, out.Count)
		t.Histogram, t.Sum, t.Count = out, out.Sum, out.Count
	case m.Summary != nil:
		sm := m.GetSummary()
		t.Sum, t.Count = sm.GetSampleSum()/scale, float64(sm.GetSampleCount())
		for _, q := range sm.GetQuantile() {
			if v := q.GetValue(); !math.IsNaN(v) {
				if t.Quantiles == nil {
					t.Quantiles = map[float64]float64{}
				}
				t.Quantiles[q.GetQuantile()] = v / scale
			}
		}
	}
	return t
}

func evented(fams map[string]*family) Evented {
	e := Evented{}
	if f := fams["kubelet_evented_pleg_connection_error_count"]; f != nil && len(f.Metric) > 0 {
		e.Present, e.ConnectionErrors = true, scalar(f.Metric[0])
	}
	if f := fams["kubelet_evented_pleg_connection_success_count"]; f != nil && len(f.Metric) > 0 {
		e.Present, e.ConnectionOK = true, scalar(f.Metric[0])
	}
	e.Latency = timing(fams, "kubelet_evented_pleg_connection_latency_seconds", "")
	return e
}

// readOperations reads kubelet_runtime_operations_* of both generations,
// the newer names winning where a kubelet exposed both.
func (s *Snapshot) readOperations(fams map[string]*family) {
	s.addCounts(fams["kubelet_runtime_operations"], false)
	s.addCounts(fams["kubelet_runtime_operations_errors"], true)
	s.addDurations(fams["kubelet_runtime_operations_latency_microseconds"], usPerSecond)
	s.addCounts(fams["kubelet_runtime_operations_total"], false)
	s.addCounts(fams["kubelet_runtime_operations_errors_total"], true)
	s.addDurations(fams["kubelet_runtime_operations_duration_seconds"], 1)
}

func (s *Snapshot) op(m *dto.Metric) *Operation {
	name := label(m, "operation_type")
	o := s.Operations[name]
	if o == nil {
		o = &Operation{}
		s.Operations[name] = o
	}
	return o
}

func (s *Snapshot) addCounts(f *family, errors bool) {
	if f == nil {
		return
	}
	for _, m := range f.Metric {
		if errors {
			s.op(m).Errors = scalar(m)
		} else {
			s.op(m).Total = scalar(m)
		}
	}
}

func (s *Snapshot) addDurations(f *family, scale float64) {
	if f == nil {
		return
	}
	for _, m := range f.Metric {
		s.op(m).Duration = fromMetric(f.GetName(), m, scale)
	}
}

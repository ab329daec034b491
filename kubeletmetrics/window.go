package kubeletmetrics

import "time"

// Stats is what a Window learned from the scrapes over its span.
type Stats struct {
	// Span is the time between the base scrape and the latest; zero when
	// there is no base yet, and the figures are then since kubelet start.
	Span time.Duration
	// Reset is true when a counter went down since the base scrape (the
	// kubelet restarted): the figures are then since that restart.
	Reset bool
	// Relists is how many relists completed in the span.
	Relists float64
	// RelistP99 is the 99th percentile relist duration over the span, from
	// histogram bucket deltas (or a summary's own 0.99 quantile before 1.14).
	RelistP99    Quantile
	HasRelistP99 bool
	// RelistP99Source says where RelistP99 came from: "window",
	// "since-start" or "summary".
	RelistP99Source string
	// PodRelists and PodRelistP99 are the per-pod relists of the span
	// (kubelet_pleg_pod_relist_duration_seconds, 1.36 on): how long reading
	// one changed pod's status took, the part of a relist one stuck pod
	// makes slow.
	PodRelists      float64
	PodRelistP99    Quantile
	HasPodRelistP99 bool
	// Operations are runtime calls and errors in the span by operation_type.
	Operations map[string]OperationStats
	// Latest are the relists between the previous scrape and this one:
	// whether the relist is slow now, not only somewhere in the span.
	Latest *LatestRelists
}

// LatestRelists are the relists completed since the previous scrape.
type LatestRelists struct {
	Relists      float64
	RelistP99    Quantile
	HasRelistP99 bool
}

// OperationStats are one operation_type's calls in a span.
type OperationStats struct {
	Calls  float64
	Errors float64
}

type sample struct {
	at   time.Time
	snap *Snapshot
}

// Window keeps the scrapes of the last span and compares the newest with
// the oldest. It is not safe for concurrent use.
type Window struct {
	span    time.Duration
	samples []sample
}

// NewWindow keeps scrapes for span.
func NewWindow(span time.Duration) *Window { return &Window{span: span} }

// Add records a scrape taken at at and returns the stats over the span.
func (w *Window) Add(at time.Time, s *Snapshot) Stats {
	w.samples = append(w.samples, sample{at: at, snap: s})
	// Drop samples older than the span, but keep one to compare against.
	for len(w.samples) > 2 && at.Sub(w.samples[1].at) >= w.span {
		w.samples = w.samples[1:]
	}
	if len(w.samples) == 1 {
		return Compare(nil, s, 0)
	}
	base := w.samples[0]
	st := Compare(base.snap, s, at.Sub(base.at))
	prev := w.samples[len(w.samples)-2]
	latest := Compare(prev.snap, s, at.Sub(prev.at))
	st.Latest = &LatestRelists{Relists: latest.Relists, RelistP99: latest.RelistP99, HasRelistP99: latest.HasRelistP99}
	return st
}

// Compare computes the stats between base (nil: since kubelet start) and cur.
func Compare(base, cur *Snapshot, span time.Duration) Stats {
	st := Stats{Span: span, Operations: map[string]OperationStats{}}
	var baseRelist *Histogram
	if base != nil {
		baseRelist = base.Relist.Histogram
	}
	switch {
	case cur.Relist.Histogram != nil:
		delta, reset := cur.Relist.Histogram.Sub(baseRelist)
		st.Reset = st.Reset || reset
		st.Relists = delta.total()
		st.RelistP99, st.HasRelistP99 = delta.Quantile(0.99)
		st.RelistP99Source = "window"
		if base == nil || reset {
			st.RelistP99Source = "since-start"
		}
	case cur.Relist.Present():
		st.Relists = cur.Relist.Count
		if base != nil && base.Relist.Count <= cur.Relist.Count {
			st.Relists -= base.Relist.Count
		}
		if q, ok := cur.Relist.Quantiles[0.99]; ok {
			st.RelistP99, st.HasRelistP99, st.RelistP99Source = Quantile{Seconds: q}, true, "summary"
		}
	}
	if cur.PodRelist.Histogram != nil {
		var basePod *Histogram
		if base != nil {
			basePod = base.PodRelist.Histogram
		}
		delta, reset := cur.PodRelist.Histogram.Sub(basePod)
		st.Reset = st.Reset || reset
		st.PodRelists = delta.total()
		st.PodRelistP99, st.HasPodRelistP99 = delta.Quantile(0.99)
	}
	for name, op := range cur.Operations {
		os := OperationStats{Calls: op.Total, Errors: op.Errors}
		if base != nil {
			if b := base.Operations[name]; b != nil && b.Total <= op.Total && b.Errors <= op.Errors {
				os.Calls, os.Errors = op.Total-b.Total, op.Errors-b.Errors
			} else if b != nil {
				st.Reset = true
			}
		}
		st.Operations[name] = os
	}
	return st
}

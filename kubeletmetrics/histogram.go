package kubeletmetrics

import (
	"math"
	"sort"
)

// Bucket is one cumulative histogram bucket: Count observations were at or
// below UpperBound (+Inf for the last).
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a cumulative histogram in seconds.
type Histogram struct {
	Buckets []Bucket
	Count   float64
	Sum     float64
}

// Quantile is a histogram quantile with where it came from.
type Quantile struct {
	Seconds float64
	// AboveLargestBucket is true when the quantile fell in the +Inf bucket:
	// Seconds is then the largest finite bound, a lower limit.
	AboveLargestBucket bool
}

// Quantile estimates the q-quantile (0 < q < 1) as Prometheus's
// histogram_quantile does: linear interpolation inside the bucket the rank
// falls in. ok is false when the histogram holds no observations.
func (h *Histogram) Quantile(q float64) (Quantile, bool) {
	if h == nil || len(h.Buckets) == 0 || h.total() <= 0 {
		return Quantile{}, false
	}
	total := h.total()
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.Buckets {
		if b.Count < rank {
			prevBound, prevCount = b.UpperBound, b.Count
			continue
		}
		if math.IsInf(b.UpperBound, 1) {
			return Quantile{Seconds: h.largestFinite(), AboveLargestBucket: true}, true
		}
		if i == 0 && b.UpperBound <= 0 {
			return Quantile{Seconds: b.UpperBound}, true
		}
		inBucket := b.Count - prevCount
		if inBucket <= 0 {
			return Quantile{Seconds: b.UpperBound}, true
		}
		return Quantile{Seconds: prevBound + (b.UpperBound-prevBound)*(rank-prevCount)/inBucket}, true
	}
	return Quantile{Seconds: h.largestFinite(), AboveLargestBucket: true}, true
}

// total is the observation count: the +Inf bucket, or Count without one.
func (h *Histogram) total() float64 {
	if n := len(h.Buckets); n > 0 && math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		return h.Buckets[n-1].Count
	}
	return h.Count
}

func (h *Histogram) largestFinite() float64 {
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if !math.IsInf(h.Buckets[i].UpperBound, 1) {
			return h.Buckets[i].UpperBound
		}
	}
	return 0
}

// Sub returns h minus base: the observations made between two scrapes.
// reset is true when h cannot follow base (a count went down, or the
// buckets changed), as after a kubelet restart; the delta is then h whole,
// as Prometheus's rate() treats a counter reset.
func (h *Histogram) Sub(base *Histogram) (delta *Histogram, reset bool) {
	if base == nil {
		return h, false
	}
	if h.Count < base.Count || len(h.Buckets) != len(base.Buckets) {
		return h, true
	}
	d := &Histogram{Count: h.Count - base.Count, Sum: h.Sum - base.Sum, Buckets: make([]Bucket, len(h.Buckets))}
	for i, b := range h.Buckets {
		if b.UpperBound != base.Buckets[i].UpperBound || b.Count < base.Buckets[i].Count {
			return h, true
		}
		d.Buckets[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - base.Buckets[i].Count}
	}
	return d, false
}

// sortBuckets orders buckets by bound and makes sure there is a +Inf one.
func sortBuckets(bs []Bucket, count float64) []Bucket {
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	if n := len(bs); n == 0 || !math.IsInf(bs[n-1].UpperBound, 1) {
		bs = append(bs, Bucket{UpperBound: math.Inf(1), Count: count})
	}
	return bs
}

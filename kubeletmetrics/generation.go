package kubeletmetrics

import "math"

// Generation names which kubelet metric generation a scrape belongs to,
// from the families present (kubelet.md §2).
type Generation string

// The generations, oldest first.
const (
	GenUnknown Generation = "unknown"
	// GenMicroseconds: microsecond summaries only (up to 1.13).
	GenMicroseconds Generation = "v1.13-microsecond-summaries"
	// GenTransition: both the summaries and the second histograms (1.14-1.17).
	GenTransition Generation = "v1.14-summaries-and-histograms"
	// GenLastSeen: second histograms plus kubelet_pleg_last_seen_seconds,
	// runtime operations in DefBuckets (1.18-1.19).
	GenLastSeen Generation = "v1.18-last-seen-gauge"
	// GenWideBuckets: runtime operation buckets up to 745 s (1.20-1.25).
	GenWideBuckets Generation = "v1.20-wide-runtime-buckets"
	// GenEvented: the Evented PLEG metrics are registered (1.26-1.35).
	GenEvented Generation = "v1.26-evented-pleg-metrics"
	// GenPodRelist: kubelet_pleg_pod_relist_duration_seconds (1.36 on).
	GenPodRelist Generation = "v1.36-pod-relist"
	// GenEventedHints: the Evented PLEG only asks the generic relist to run,
	// which keeps its 1 s period and the gauge (1.37 on, known from
	// kubernetes_build_info; the families alone look like 1.36).
	GenEventedHints Generation = "v1.37-evented-hints"
)

// wideBucketBound is the largest runtime-operation bucket from 1.20 on
// (ExponentialBuckets(0.005, 2.5, 14)); DefBuckets end at 10.
const wideBucketBound = 745

func detectGeneration(fams map[string]*family) Generation {
	has := func(n string) bool { f := fams[n]; return f != nil && len(f.Metric) > 0 }
	switch {
	case has("kubelet_pleg_pod_relist_duration_seconds"):
		return GenPodRelist
	case has("kubelet_evented_pleg_connection_success_count") || has("kubelet_evented_pleg_connection_error_count"):
		return GenEvented
	case has("kubelet_pleg_last_seen_seconds") && wideRuntimeBuckets(fams):
		return GenWideBuckets
	case has("kubelet_pleg_last_seen_seconds"):
		return GenLastSeen
	case has("kubelet_pleg_relist_duration_seconds") && has("kubelet_pleg_relist_latency_microseconds"):
		return GenTransition
	case has("kubelet_pleg_relist_duration_seconds"):
		return GenLastSeen // histograms without the gauge: treat as the newer shape
	case has("kubelet_pleg_relist_latency_microseconds"):
		return GenMicroseconds
	}
	return GenUnknown
}

func wideRuntimeBuckets(fams map[string]*family) bool {
	f := fams["kubelet_runtime_operations_duration_seconds"]
	if f == nil {
		return false
	}
	for _, m := range f.Metric {
		for _, b := range m.GetHistogram().GetBucket() {
			if ub := b.GetUpperBound(); ub > wideBucketBound-1 && !math.IsInf(ub, 1) {
				return true
			}
		}
	}
	return false
}

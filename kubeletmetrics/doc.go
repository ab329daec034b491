// Package kubeletmetrics scrapes the kubelet's /metrics and normalizes the
// PLEG and runtime-operation metrics of every kubelet generation into one
// Snapshot: the microsecond summaries (up to 1.17), the second histograms
// (1.14 on), kubelet_pleg_last_seen_seconds (1.18 on), the wider runtime
// buckets (1.20 on), the Evented PLEG metrics (1.26 on) and the per-pod
// relist histogram (1.36 on).
//
// A Window turns successive snapshots into rates and quantiles over a span,
// from histogram bucket deltas, and survives counter resets (a kubelet
// restart). A Scraper fetches the text with its own short deadline: while
// the runtime is frozen the kubelet's /metrics can stop answering, and a
// scrape that hangs is reported as such (ErrorKind Timeout), not swallowed.
package kubeletmetrics

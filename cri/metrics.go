package cri

import (
	"fmt"
	"time"

	"k8s.io/component-base/metrics"
)

// durationBuckets run from 1 ms to the kubelet's 2 min runtime request
// timeout, well past any per-call timeout hangwatch uses.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics exports what a Prober observes. It implements Observer.
type Metrics struct {
	duration    *metrics.HistogramVec
	probes      *metrics.CounterVec
	lastSuccess *metrics.GaugeVec
	respBytes   *metrics.GaugeVec
	objects     *metrics.GaugeVec
	conditions  *metrics.GaugeVec
	inflight    *inflightCollector
}

// NewMetrics registers the CRI metrics; the in-flight gauge reads ages from
// inflight (a Prober's OldestInFlight) at scrape time.
func NewMetrics(reg metrics.KubeRegistry, inflight func() map[string]time.Duration) *Metrics {
	m := &Metrics{
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Name: "hangwatch_cri_call_duration_seconds", StabilityLevel: metrics.ALPHA, Buckets: durationBuckets,
			Help: "Duration of CRI calls from send to answer, observed when the call returns (a hung call lands here only once it answers).",
		}, []string{"method"}),
		probes: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: "hangwatch_cri_probes_total", StabilityLevel: metrics.ALPHA,
			Help: "Probed CRI calls by method and result (ok, slow, timeout, unreachable, too_large, error, canceled, unimplemented); a call still in flight counts as timeout each cycle it is seen.",
		}, []string{"method", "result"}),
		lastSuccess: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Name: "hangwatch_cri_last_success_timestamp_seconds", StabilityLevel: metrics.ALPHA,
			Help: "Unix time at which a call of the method last answered without error.",
		}, []string{"method"}),
		respBytes: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Name: "hangwatch_cri_response_size_bytes", StabilityLevel: metrics.ALPHA,
			Help: "Size of the method's last answer; the kubelet fails calls whose answer exceeds 16 MiB.",
		}, []string{"method"}),
		objects: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Name: "hangwatch_cri_objects", StabilityLevel: metrics.ALPHA,
			Help: "Pod sandboxes and containers the runtime listed in the last cycle that listed them.",
		}, []string{"kind"}),
		conditions: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Name: "hangwatch_cri_runtime_condition", StabilityLevel: metrics.ALPHA,
			Help: "The runtime's own conditions from the last Status answer: 1 true, 0 false. required=\"false\" ones (such as ContainerdHasNoDeprecationWarnings) are ignored by the kubelet and by hangwatch's verdicts.",
		}, []string{"type", "required"}),
		inflight: newInflightCollector(inflight),
	}
	reg.MustRegister(m.duration, m.probes, m.lastSuccess, m.respBytes, m.objects, m.conditions)
	reg.CustomMustRegister(m.inflight)
	return m
}

// ObserveProbe counts the result of one probed call.
func (m *Metrics) ObserveProbe(r CallResult) {
	m.probes.WithLabelValues(r.Method, string(r.Class)).Inc()
}

// ObserveCompletion records a call that returned.
func (m *Metrics) ObserveCompletion(r CallResult) {
	m.duration.WithLabelValues(r.Method).Observe(r.Duration.Seconds())
	if r.Err == "" {
		end := r.Start.Add(r.Duration)
		m.lastSuccess.WithLabelValues(r.Method).Set(float64(end.UnixNano()) / 1e9)
		m.respBytes.WithLabelValues(r.Method).Set(float64(r.ResponseBytes))
	}
}

// ObserveCycle records the object counts and runtime conditions a cycle saw.
func (m *Metrics) ObserveCycle(c Cycle) {
	for _, cond := range c.Conditions {
		m.conditions.WithLabelValues(cond.Type, fmt.Sprint(cond.Required)).Set(boolValue(cond.Status))
	}
	if c.Sandboxes >= 0 {
		m.objects.WithLabelValues("sandbox").Set(float64(c.Sandboxes))
	}
	if c.Containers >= 0 {
		m.objects.WithLabelValues("container").Set(float64(c.Containers))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// inflightCollector reports the age of the oldest outstanding call per
// method at scrape time, so a hang shows while it lasts.
type inflightCollector struct {
	metrics.BaseStableCollector
	desc *metrics.Desc
	ages func() map[string]time.Duration
}

func newInflightCollector(ages func() map[string]time.Duration) *inflightCollector {
	return &inflightCollector{ages: ages, desc: metrics.NewDesc("hangwatch_cri_call_in_flight_seconds",
		"How long the method's CRI calls have waited for an answer: the age of its oldest call sent and not answered, or, when longer, the time since the first of its calls sent after its last answer (a call cancelled at runtime.callLifetime and sent again goes on counting); 0 when none is out.",
		[]string{"method"}, nil, metrics.ALPHA, "")}
}

func (c *inflightCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- c.desc }

func (c *inflightCollector) CollectWithStability(ch chan<- metrics.Metric) {
	ages := c.ages()
	for _, m := range Methods {
		ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, ages[m].Seconds(), m)
	}
}

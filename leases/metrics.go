package leases

import "k8s.io/component-base/metrics"

// Metrics are the Lease gauges and read counter.
type Metrics struct {
	renewTime *metrics.Gauge
	renewAge  *metrics.Gauge
	left      *metrics.Gauge
	reads     *metrics.CounterVec
	healthz   *metrics.CounterVec
}

// NewMetrics registers the Lease metrics with reg.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		renewTime: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_lease_renew_time_seconds", StabilityLevel: metrics.ALPHA,
			Help: "spec.renewTime of the node's Lease, as a Unix timestamp (the kubelet's clock)."}),
		renewAge: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_lease_renew_age_seconds", StabilityLevel: metrics.ALPHA,
			Help: "Seconds since the node Lease's renewTime last changed, on hangwatch's monotonic clock."}),
		left: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_lease_grace_remaining_seconds", StabilityLevel: metrics.ALPHA,
			Help: "Seconds left before the node lifecycle controller would mark the node Unknown if the Lease is not renewed (negative once overdue)."}),
		reads: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_lease_reads_total", StabilityLevel: metrics.ALPHA,
			Help: "Reads of the node Lease by result: ok, not_found or error."}, []string{"result"}),
		healthz: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_kubelet_healthz_probes_total", StabilityLevel: metrics.ALPHA,
			Help: "Probes of the kubelet's local /healthz by result: ok (it answered), timeout (it did not answer in time), refused or error."}, []string{"result"}),
	}
	reg.MustRegister(m.renewTime, m.renewAge, m.left, m.reads, m.healthz)
	return m
}

func (m *Metrics) read(result string) {
	if m != nil {
		m.reads.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) observe(o Observation) {
	if m == nil {
		return
	}
	if !o.Found {
		m.read("not_found")
		return
	}
	m.read("ok")
	m.renewTime.Set(float64(o.RenewTime.UnixMilli()) / 1000)
	m.renewAge.Set(o.RenewAge.Seconds())
	m.left.Set(o.SecondsLeft())
}

func (m *Metrics) probed(result string) {
	if m != nil {
		m.healthz.WithLabelValues(result).Inc()
	}
}

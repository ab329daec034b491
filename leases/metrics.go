package leases

import "k8s.io/component-base/metrics"

// Metrics are the Lease gauges and read counter.
type Metrics struct {
	renewTime *metrics.Gauge
	renewAge  *metrics.Gauge
	left      *metrics.Gauge
	reads     *metrics.CounterVec
	healthz   *metrics.CounterVec
	refused   *metrics.Gauge
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
		refused: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_kubelet_healthz_refused", StabilityLevel: metrics.ALPHA,
			Help: "1 while the kubelet's local /healthz refuses connections (healthzPort 0, bound elsewhere, or no kubelet): the kubelet is then watched through its Lease alone, read every idle period while renewed on time, and never restarted; 0 otherwise."}),
	}
	reg.MustRegister(m.renewTime, m.renewAge, m.left, m.reads, m.healthz, m.refused)
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

func (m *Metrics) refusedProbe(refused bool) {
	if m == nil {
		return
	}
	v := 0.0
	if refused {
		v = 1
	}
	m.refused.Set(v)
}

func (m *Metrics) probed(result string) {
	if m != nil {
		m.healthz.WithLabelValues(result).Inc()
	}
}

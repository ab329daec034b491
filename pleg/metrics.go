package pleg

import (
	"math"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
)

// Metrics are the PLEG gauges and counters.
type Metrics struct {
	lastSeenAge *metrics.Gauge
	relistP99   *metrics.Gauge
	emulated    *metrics.Gauge
	scrapes     *metrics.CounterVec
	relists     *metrics.CounterVec
}

// NewMetrics registers the PLEG metrics with reg.
func NewMetrics(reg metrics.KubeRegistry) *Metrics {
	m := &Metrics{
		lastSeenAge: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_pleg_last_seen_age_seconds", StabilityLevel: metrics.ALPHA,
			Help: "Seconds since the kubelet's last successful PLEG relist (now - kubelet_pleg_last_seen_seconds); NaN when unknown or untrusted (Evented PLEG)."}),
		relistP99: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_pleg_relist_p99_seconds", StabilityLevel: metrics.ALPHA,
			Help: "The kubelet's PLEG relist duration p99 over the window, from histogram bucket deltas; NaN when unknown."}),
		emulated: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_pleg_emulated_relist_seconds", StabilityLevel: metrics.ALPHA,
			Help: "Duration of hangwatch's own relist emulation, or how long the one still out has run."}),
		scrapes: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_kubelet_metrics_scrapes_total", StabilityLevel: metrics.ALPHA,
			Help: "Scrapes of the kubelet's /metrics by result: ok, timeout, unreachable, unauthorized, forbidden, http_error, parse_error or tls_error."}, []string{"result"}),
		relists: metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_pleg_emulated_relists_total", StabilityLevel: metrics.ALPHA,
			Help: "Emulated relists by result: ok, timeout (still out when looked at), too_large, unreachable or error."}, []string{"result"}),
	}
	reg.MustRegister(m.lastSeenAge, m.relistP99, m.emulated, m.scrapes, m.relists)
	m.lastSeenAge.Set(math.NaN())
	m.relistP99.Set(math.NaN())
	return m
}

func (m *Metrics) observeScrape(err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(kubeletmetrics.Kind(err))
	}
	m.scrapes.WithLabelValues(result).Inc()
}

func (m *Metrics) observeRelist(r RelistResult) {
	if m == nil {
		return
	}
	m.emulated.Set(r.Duration.Seconds())
	m.relists.WithLabelValues(string(r.Class)).Inc()
}

func (m *Metrics) observeAssessment(a Assessment) {
	if m == nil {
		return
	}
	m.lastSeenAge.Set(orNaN(a.LastSeenAgeSeconds))
	m.relistP99.Set(orNaN(a.RelistP99Seconds))
}

func orNaN(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

package leases

import (
	"math"
	"time"
)

// Observation is what one look at the Lease found. When the read failed,
// Readable is false and the other fields are those of the last read that
// worked (zero before one did).
type Observation struct {
	Readable bool
	// ReadError classes a failed read: forbidden, unauthorized, timeout,
	// throttled or error.
	ReadError string
	// ReadLatency is how long the read took.
	ReadLatency time.Duration
	Found       bool
	Holder      string
	// RenewTime is spec.renewTime as the kubelet wrote it (node clock).
	RenewTime time.Time
	// LeaseDuration is spec.leaseDurationSeconds.
	LeaseDuration time.Duration
	// RenewInterval is when the kubelet renews: a quarter of the lease
	// duration (nodeLeaseRenewIntervalFraction), 10s by default.
	RenewInterval time.Duration
	// RenewAge is how long ago renewTime last changed.
	RenewAge time.Duration
	// Grace is the controller's --node-monitor-grace-period.
	Grace time.Duration
	// Healthz is the last probe of the kubelet's local /healthz: ok,
	// unhealthy, timeout, refused or error; empty when not probed.
	Healthz string
	// LateWhileAnswering holds from a reading that found the Lease late
	// (2 missed renewals) while the kubelet answered on the node, until
	// renewals have been on time for LateHold.
	LateWhileAnswering bool
}

// SecondsLeft is how long before the controller would mark the node
// Unknown if the kubelet renews no more; negative once overdue.
func (o Observation) SecondsLeft() float64 { return (o.Grace - o.RenewAge).Seconds() }

// MissedRenewals counts the renewals due since the last one.
func (o Observation) MissedRenewals() int {
	if o.RenewInterval <= 0 {
		return 0
	}
	return int(math.Floor(float64(o.RenewAge) / float64(o.RenewInterval)))
}

// Fields is the `lease` input of the condition rules.
//
//	readable              bool    the read worked (else the keys below are the last good read's)
//	readError             string  why it did not: forbidden, unauthorized, timeout, throttled, error
//	readSeconds           double  how long the read took
//	found                 bool
//	holder                string  spec.holderIdentity
//	renewAgeSeconds       double  since renewTime last changed
//	renewIntervalSeconds  double  the kubelet's renew interval (lease duration / 4)
//	leaseDurationSeconds  int
//	graceSeconds          double  --node-monitor-grace-period
//	secondsLeft           double  grace minus renew age
//	missedRenewals        int     renewals due since the last one
//	healthz               string  the kubelet's local /healthz: ok, unhealthy (answered, not 200), timeout, refused, error; "" when not probed
//	kubeletSilent         bool    that probe got no answer in time: the kubelet process does not answer
//	lateWhileAnswering    bool    the Lease was found late while the kubelet answered on the node (its writes do not reach
//	                              the API server), until renewals have been on time for 5m
//
// While the kubelet answers on the node and renewed on time, the keys from
// the Lease are those of a read up to --lease-idle-period old.
func (o Observation) Fields() map[string]any {
	return map[string]any{
		"readable": o.Readable, "readError": o.ReadError, "readSeconds": round(o.ReadLatency.Seconds()),
		"found": o.Found, "holder": o.Holder,
		"renewAgeSeconds":      round(o.RenewAge.Seconds()),
		"renewIntervalSeconds": o.RenewInterval.Seconds(),
		"leaseDurationSeconds": int64(o.LeaseDuration / time.Second),
		"graceSeconds":         o.Grace.Seconds(),
		"secondsLeft":          round(o.SecondsLeft()),
		"missedRenewals":       o.MissedRenewals(),
		"healthz":              o.Healthz,
		"kubeletSilent":        o.Healthz == HealthzNoAnswer,
		"lateWhileAnswering":   o.LateWhileAnswering,
	}
}

func round(s float64) float64 { return math.Round(s*1000) / 1000 }

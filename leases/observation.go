package leases

import (
	"math"
	"time"

	"github.com/hangwatch/hangwatch/observations"
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

// Fields is the `lease` input of the condition rules (observations.Lease
// documents each field).
func (o Observation) Fields() observations.Lease {
	return observations.Lease{
		Readable: o.Readable, ReadError: o.ReadError, ReadSeconds: round(o.ReadLatency.Seconds()),
		Found: o.Found, Holder: o.Holder,
		RenewAgeSeconds:      round(o.RenewAge.Seconds()),
		RenewIntervalSeconds: o.RenewInterval.Seconds(),
		LeaseDurationSeconds: int64(o.LeaseDuration / time.Second),
		GraceSeconds:         o.Grace.Seconds(),
		SecondsLeft:          round(o.SecondsLeft()),
		MissedRenewals:       o.MissedRenewals(),
		Healthz:              o.Healthz,
		KubeletSilent:        o.Healthz == HealthzNoAnswer,
		LateWhileAnswering:   o.LateWhileAnswering,
	}
}

func round(s float64) float64 { return math.Round(s*1000) / 1000 }

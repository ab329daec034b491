package leases

import (
	"math"
	"time"
)

// Observation is what one look at the Lease found.
type Observation struct {
	Found  bool
	Holder string
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
//	found                 bool
//	holder                string  spec.holderIdentity
//	renewAgeSeconds       double  since renewTime last changed
//	renewIntervalSeconds  double  the kubelet's renew interval (lease duration / 4)
//	leaseDurationSeconds  int
//	graceSeconds          double  --node-monitor-grace-period
//	secondsLeft           double  grace minus renew age
//	missedRenewals        int     renewals due since the last one
func (o Observation) Fields() map[string]any {
	return map[string]any{
		"found": o.Found, "holder": o.Holder,
		"renewAgeSeconds":      round(o.RenewAge.Seconds()),
		"renewIntervalSeconds": o.RenewInterval.Seconds(),
		"leaseDurationSeconds": int64(o.LeaseDuration / time.Second),
		"graceSeconds":         o.Grace.Seconds(),
		"secondsLeft":          round(o.SecondsLeft()),
		"missedRenewals":       o.MissedRenewals(),
	}
}

func round(s float64) float64 { return math.Round(s*1000) / 1000 }

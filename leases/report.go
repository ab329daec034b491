package leases

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Report is the node Lease as one look found it, for `hangwatch diag`: the
// same figures, rounded alike, as the observation the daemon's rules read.
type Report struct {
	Node                 string     `json:"node"`
	Found                bool       `json:"found"`
	RenewTime            *time.Time `json:"renewTime,omitempty"`
	RenewAgeSeconds      float64    `json:"renewAgeSeconds"`
	RenewIntervalSeconds float64    `json:"renewIntervalSeconds"`
	GraceSeconds         float64    `json:"graceSeconds"`
	SecondsLeft          float64    `json:"secondsLeft"`
	MissedRenewals       int        `json:"missedRenewals"`
	Error                string     `json:"error,omitempty"`
}

// NewReport is the report of one observation of node's Lease.
func NewReport(node string, o Observation) *Report {
	r := &Report{Node: node, Found: o.Found, GraceSeconds: o.Grace.Seconds()}
	if o.Found {
		rt := o.RenewTime
		r.RenewTime = &rt
		r.RenewAgeSeconds, r.RenewIntervalSeconds = round(o.RenewAge.Seconds()), o.RenewInterval.Seconds()
		r.SecondsLeft, r.MissedRenewals = round(o.SecondsLeft()), o.MissedRenewals()
	}
	return r
}

// Client reads the node's Lease and the API server's version.
type Client interface {
	LeaseReader
	ServerVersioner
}

// Check reads the node's Lease once and reports its age against the grace
// period (configured when positive, else the server's version's), within
// 5 s. The age comes from the node's own clock, which the kubelet stamps
// renewTime with. `diag` shows it; the daemon watches the same Observation.
func Check(ctx context.Context, client Client, node string, configuredGrace time.Duration, clk clock.WithTicker) *Report {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grace := GraceFor(ctx, client, configuredGrace)
	obs, err := NewObserver(client, Config{Node: node, Grace: grace}, clk).Observe(ctx)
	if err != nil {
		return &Report{Node: node, Error: err.Error()}
	}
	return NewReport(node, obs)
}

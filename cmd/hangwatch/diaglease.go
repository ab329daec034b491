package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/leases"
)

// leaseSection is the node Lease as diag sees it in one read: the renew age
// comes from the node's own clock (the kubelet stamps renewTime with it).
// It does not change the verdict.
type leaseSection struct {
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

// readLease reads the Lease once when there are credentials; nil without.
func (f *apiFlags) readLease(ctx context.Context) *leaseSection {
	cfg, err := f.restConfig()
	if cfg == nil && err == nil {
		return nil
	}
	ls := &leaseSection{}
	if ls.Node, err = f.node(); err != nil {
		ls.Error = err.Error()
		return ls
	}
	var client *apiclient.Client
	if err == nil {
		client, err = apiclient.New(cfg)
	}
	if err != nil {
		ls.Error = err.Error()
		return ls
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grace := f.graceFor(ctx, client)
	obs, err := leases.NewObserver(client, leases.Config{Node: ls.Node, Grace: grace, Period: time.Second},
		clock.RealClock{}).Observe(ctx)
	if err != nil {
		ls.Error = err.Error()
		return ls
	}
	ls.Found, ls.GraceSeconds = obs.Found, grace.Seconds()
	if obs.Found {
		rt := obs.RenewTime
		ls.RenewTime = &rt
		ls.RenewAgeSeconds, ls.RenewIntervalSeconds = roundTo(obs.RenewAge.Seconds()), obs.RenewInterval.Seconds()
		ls.SecondsLeft, ls.MissedRenewals = roundTo(obs.SecondsLeft()), obs.MissedRenewals()
	}
	return ls
}

func roundTo(s float64) float64 { return float64(int64(s*1000)) / 1000 }

func writeLeaseTable(w io.Writer, l *leaseSection) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case l.Error != "":
		fmt.Fprintf(tw, "\nNODE LEASE\tnot read: %s\n", l.Error)
	case !l.Found:
		fmt.Fprintf(tw, "\nNODE LEASE\t%s/%s does not exist: nothing renews it\n", leases.Namespace, l.Node)
	default:
		fmt.Fprintf(tw, "\nNODE LEASE\t%s/%s renewed %.1fs ago (due every %gs, %d missed); %.1fs of the %gs grace left before the node is marked Unknown\n",
			leases.Namespace, l.Node, l.RenewAgeSeconds, l.RenewIntervalSeconds, l.MissedRenewals, l.SecondsLeft, l.GraceSeconds)
	}
	return tw.Flush()
}

package main

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/leases"
)

// readLease reads the Lease once when there are credentials; nil without.
// The renew age comes from the node's own clock (the kubelet stamps
// renewTime with it). It does not change diag's verdict.
func (f *apiFlags) readLease(ctx context.Context) *leases.Report {
	cfg, err := f.restConfig()
	if cfg == nil && err == nil {
		return nil
	}
	node, nerr := f.node()
	failed := func(err error) *leases.Report { return &leases.Report{Node: node, Error: err.Error()} }
	if nerr != nil {
		return failed(nerr)
	}
	if err != nil {
		return failed(err)
	}
	client, err := apiclient.New(cfg)
	if err != nil {
		return failed(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grace := f.graceFor(ctx, client)
	obs, err := leases.NewObserver(client, leases.Config{Node: node, Grace: grace, Period: time.Second},
		clock.RealClock{}).Observe(ctx)
	if err != nil {
		return failed(err)
	}
	return leases.NewReport(node, obs)
}

package leases

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// Run reads the Lease every Period until ctx ends and hands each reading to
// sink. A failed read hands nothing on, since it says nothing about the
// kubelet (the API server may be what is down); it is counted and logged
// once per run of failures.
func (o *Observer) Run(ctx context.Context, m *Metrics, sink func(Observation)) {
	failing := false
	t := o.clk.NewTicker(o.cfg.Period)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, o.cfg.Period)
		obs, err := o.Observe(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.read("error")
			if !failing {
				klog.ErrorS(err, "Reading the node Lease failed; KubeletUnresponsive keeps its state until a read works")
			}
			failing = true
		default:
			if failing {
				klog.InfoS("Reading the node Lease works again")
			}
			failing = false
			m.observe(obs)
			sink(obs)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Grace returns the node lifecycle controller's default
// --node-monitor-grace-period for a Kubernetes minor version: 50s from 1.32
// (PR #126287), 40s before.
func Grace(major, minor int) time.Duration {
	if major > 1 || minor >= 32 {
		return 50 * time.Second
	}
	return 40 * time.Second
}

package leases

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// Read reads the Lease once and says how long that took. A failed read
// says nothing about the kubelet (the API server may be what is down): it
// comes back unreadable, with the last good reading, and is counted and
// logged once per run of failures.
func (o *Observer) Read(ctx context.Context, m *Metrics) Observation {
	start := o.clk.Now()
	obs, err := o.Observe(ctx)
	if err != nil {
		m.read("error")
		if o.last.Readable || o.last.ReadError == "" {
			klog.ErrorS(err, "Reading the node Lease failed; KubeletUnresponsive is Unknown until reads work again")
		}
		o.last.Readable, o.last.ReadError, o.last.ReadLatency = false, readError(err), o.clk.Since(start)
		o.last.Grace = o.cfg.Grace
		return o.last
	}
	if o.last.ReadError != "" {
		klog.InfoS("Reading the node Lease works again")
	}
	obs.Readable, obs.ReadLatency = true, o.clk.Since(start)
	m.observe(obs)
	o.last = obs
	return obs
}

// readError classes a failed read for the rules: a class, never the
// error's text, so the condition's message does not change with it.
func readError(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsTooManyRequests(err):
		return "throttled"
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

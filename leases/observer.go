package leases

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// Namespace holds the node Leases.
const Namespace = "kube-node-lease"

// The kubelet's defaults (kubelet.md §3.1).
const (
	DefaultLeaseDuration = 40 * time.Second
	renewFraction        = 0.25
)

// Config says which Lease to watch and what the controller does with it.
type Config struct {
	Node  string
	Grace time.Duration
}

// Observer reads the node's Lease and tracks when its renewTime changes.
// One goroutine uses it at a time.
type Observer struct {
	cfg       Config
	leases    LeaseReader
	clk       clock.WithTicker
	renewTime time.Time // the last renewTime seen
	changedAt time.Time // on clk, when it changed (estimated)
	// missingSince is when the Lease was first found missing, zero while
	// it exists: a kubelet just started creates it within seconds.
	missingSince time.Time
	readAt       time.Time   // on clk, when the Lease was last read
	last         Observation // the last reading handed on
}

// LeaseReader reads one Lease; resourceVersion "0" asks for the API
// server's watch cache.
type LeaseReader interface {
	GetLease(ctx context.Context, namespace, name, resourceVersion string) (*coordinationv1.Lease, error)
}

// NewObserver returns an observer that has not read the Lease yet.
func NewObserver(leases LeaseReader, cfg Config, clk clock.WithTicker) *Observer {
	return &Observer{cfg: cfg, leases: leases, clk: clk}
}

// Observe reads the Lease once, within ctx's deadline. The read is served
// from the API server's watch cache (resourceVersion 0), which is cheap.
func (o *Observer) Observe(ctx context.Context) (Observation, error) {
	lease, err := o.leases.GetLease(ctx, Namespace, o.cfg.Node, "0")
	now := o.clk.Now()
	sinceRead := now.Sub(o.readAt)
	if err == nil || apierrors.IsNotFound(err) {
		o.readAt = now
	}
	obs := Observation{Grace: o.cfg.Grace}
	switch {
	case apierrors.IsNotFound(err):
		o.renewTime = time.Time{}
		if o.missingSince.IsZero() {
			o.missingSince = now
		}
		// Missing counts as unrenewed since it was first missed, at the
		// kubelet's default interval.
		obs.RenewInterval = time.Duration(float64(DefaultLeaseDuration) * renewFraction)
		obs.RenewAge = now.Sub(o.missingSince)
		return obs, nil
	case err != nil:
		return obs, fmt.Errorf("get Lease %s/%s: %w", Namespace, o.cfg.Node, err)
	}
	o.missingSince = time.Time{}
	o.track(lease, now, sinceRead)
	obs.Found = true
	if lease.Spec.HolderIdentity != nil {
		obs.Holder = *lease.Spec.HolderIdentity
	}
	obs.RenewTime = o.renewTime
	obs.LeaseDuration = DefaultLeaseDuration
	if d := lease.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		obs.LeaseDuration = time.Duration(*d) * time.Second
	}
	obs.RenewInterval = time.Duration(float64(obs.LeaseDuration) * renewFraction)
	if !o.changedAt.IsZero() {
		obs.RenewAge = now.Sub(o.changedAt)
	}
	return obs, nil
}

// track notes a change of renewTime. The change happened between the last
// read and this one, sinceRead ago at most; the kubelet stamps renewTime
// with the node's clock, the one hangwatch has, so wall age bounded by
// sinceRead places it. On the first read wall age is all there is.
func (o *Observer) track(lease *coordinationv1.Lease, now time.Time, sinceRead time.Duration) {
	var rt time.Time
	if lease.Spec.RenewTime != nil {
		rt = lease.Spec.RenewTime.Time
	}
	if rt.Equal(o.renewTime) && !o.changedAt.IsZero() {
		return
	}
	first := o.changedAt.IsZero()
	o.renewTime = rt
	age := max(now.Sub(rt), 0)
	if !first {
		age = min(age, sinceRead)
	}
	if rt.IsZero() {
		age = 0
	}
	o.changedAt = now.Add(-age)
}

package leases

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Watch reads the node's Lease every Period until ctx ends and hands on
// the `lease` input of the condition rules (Observation.Fields).
type Watch struct {
	Client Client
	Node   string
	// Grace is --node-monitor-grace-period; 0: the controller's default
	// for the API server's version (GraceFor).
	Grace   time.Duration
	Period  time.Duration
	Metrics *Metrics
	Clock   clock.WithTicker
	// Healthz probes the kubelet's local /healthz after each read; nil:
	// not probed.
	Healthz *Healthz
}

// Run reads until ctx ends.
func (w *Watch) Run(ctx context.Context, emit func(map[string]any)) {
	grace := GraceFor(ctx, w.Client, w.Grace)
	klog.InfoS("Watching the node Lease", "node", w.Node, "grace", grace, "period", w.Period)
	obs := NewObserver(w.Client, Config{Node: w.Node, Grace: grace, Period: w.Period}, w.Clock)
	obs.Run(ctx, w.Metrics, func(o Observation) {
		if w.Healthz != nil {
			o.Healthz = w.Healthz.Probe(ctx)
			w.Metrics.probed(o.Healthz)
		}
		emit(o.Fields())
	})
}

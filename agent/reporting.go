package agent

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/leases"
)

// apiReporting is everything that talks to the API server: the Node's
// status, its Events and the Lease. A nil one stands for standalone mode.
type apiReporting struct {
	node      string
	client    APIClient
	events    *conditions.Events
	metrics   *conditions.ReporterMetrics
	lease     *leases.Metrics
	heartbeat time.Duration
	overwrite []string
}

// newAPIReporting connects to the API server when there is one to reach.
func newAPIReporting(o Options, cfg *config.Configuration) (*apiReporting, error) {
	if o.Client == nil {
		klog.InfoS("No --kubeconfig and not in a pod: conditions go to /conditions and /metrics only")
		return nil, nil
	}
	timeout := 10 * time.Second // the kubelet's heartbeat client uses the same
	if o.API != nil && o.API.Timeout > 0 {
		timeout = o.API.Timeout
	}
	m := conditions.NewReporterMetrics(o.Registry)
	api := cfg.APIServer
	return &apiReporting{node: o.Node, client: o.Client, metrics: m, lease: leases.NewMetrics(o.Registry),
		heartbeat: api.StatusHeartbeatPeriod.Duration, overwrite: api.OverwriteShared,
		events: conditions.NewEvents(o.Client, o.Node, m, timeout)}, nil
}

// report writes the conditions to the Node, on the daemon's clock, until
// ctx ends.
func (a *apiReporting) report(ctx context.Context, clk clock.WithTicker, set *conditions.Set) {
	r := conditions.NewReporter(a.client, set, conditions.ReporterConfig{Node: a.node, Heartbeat: a.heartbeat,
		Coalesce: 100 * time.Millisecond, RetryMin: 500 * time.Millisecond, RetryMax: 8 * time.Second, RejectedRetry: 30 * time.Second,
		RequestTimeout: 10 * time.Second, OnRestore: func(onNode []conditions.Condition) { a.events.Restored(onNode, set) },
		Overwrite: a.overwrite, OnShared: a.events.Shared}, clk, a.metrics)
	r.Run(ctx)
}

// transition records a condition's change as an Event on the Node.
func (a *apiReporting) transition(before, after conditions.Condition) {
	if a != nil {
		a.events.Transition(before, after)
	}
}

func (a *apiReporting) shutdown() {
	if a != nil {
		a.events.Shutdown()
	}
}

func (a *apiReporting) nodeName() string {
	if a == nil {
		return ""
	}
	return a.node
}

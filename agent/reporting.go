package agent

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/nodestatus"
)

// apiReporting is everything that talks to the API server: the Node's
// status, its Events and the Lease. A nil one stands for standalone mode.
type apiReporting struct {
	node      string
	client    APIClient
	events    *nodestatus.Events
	reporter  *nodestatus.Reporter // set by subscribe
	metrics   *nodestatus.ReporterMetrics
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
	m := nodestatus.NewReporterMetrics(o.Registry)
	api := cfg.APIServer
	return &apiReporting{node: o.Node, client: o.Client, metrics: m, lease: leases.NewMetrics(o.Registry),
		heartbeat: api.StatusHeartbeatPeriod.Duration, overwrite: api.OverwriteShared,
		events: nodestatus.NewEvents(o.Client, o.Node, m, timeout, o.Clock)}, nil
}

// subscribe makes the Node's status writer and its Events subscribers of
// the engine; the writer runs on the daemon's clock.
func (a *apiReporting) subscribe(engine *conditions.Engine, clk clock.WithTicker) {
	a.reporter = nodestatus.NewReporter(a.client, engine, nodestatus.ReporterConfig{Node: a.node, Heartbeat: a.heartbeat,
		Coalesce: 100 * time.Millisecond, RetryMin: 500 * time.Millisecond, RetryMax: 8 * time.Second, RejectedRetry: 30 * time.Second,
		RequestTimeout: 10 * time.Second, Overwrite: a.overwrite}, clk, a.metrics)
	nodestatus.Subscribe(engine, a.reporter, a.events)
}

// report writes the conditions to the Node until ctx ends.
func (a *apiReporting) report(ctx context.Context) { a.reporter.Run(ctx) }

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

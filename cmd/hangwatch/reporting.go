package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/leases"
)

// apiReporting is everything that talks to the API server: the Node's
// status, its Events and the Lease. A nil one stands for standalone mode.
type apiReporting struct {
	flags     *apiFlags
	node      string
	client    *apiclient.Client
	events    *conditions.Events
	metrics   *conditions.ReporterMetrics
	lease     *leases.Metrics
	heartbeat time.Duration
	overwrite []string
}

// newAPIReporting connects to the API server when there is one to reach.
func (o *runOptions) newAPIReporting(reg metrics.KubeRegistry) (*apiReporting, error) {
	cfg, err := o.api.restConfig()
	if err != nil || cfg == nil {
		if err == nil {
			klog.InfoS("No --kubeconfig and not in a pod: conditions go to /conditions and /metrics only")
		}
		return nil, err
	}
	node, err := o.api.node()
	if err != nil {
		return nil, err
	}
	client, err := apiclient.New(cfg)
	if err != nil {
		return nil, fieldError("--kubeconfig", o.api.kubeconfig, err.Error())
	}
	m := conditions.NewReporterMetrics(reg)
	return &apiReporting{flags: &o.api, node: node, client: client, metrics: m, lease: leases.NewMetrics(reg),
		heartbeat: o.conds.heartbeat, overwrite: o.conds.overwrite, events: conditions.NewEvents(client, node, m, cfg.Timeout)}, nil
}

// start runs the status reporter and the Lease watch on the daemon's clock
// until ctx ends.
func (a *apiReporting) start(ctx context.Context, wg *sync.WaitGroup, clk clock.WithTicker, set *conditions.Set, engine *conditions.Engine) {
	r := conditions.NewReporter(a.client, set, conditions.ReporterConfig{Node: a.node, Heartbeat: a.heartbeat,
		Coalesce: 100 * time.Millisecond, RetryMin: 500 * time.Millisecond, RetryMax: 8 * time.Second, RejectedRetry: 30 * time.Second,
		RequestTimeout: 10 * time.Second, OnRestore: func(onNode []conditions.Condition) { a.events.Restored(onNode, set) },
		Overwrite: a.overwrite, OnShared: a.events.Shared}, clk, a.metrics)
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	if !engine.Reads(conditions.InputLease) {
		return // no owned condition looks at the Lease: spare the API server the reads
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		grace := a.flags.graceFor(ctx, a.client)
		klog.InfoS("Watching the node Lease", "node", a.node, "grace", grace, "period", a.flags.leasePoll)
		obs := leases.NewObserver(a.client, leases.Config{Node: a.node, Grace: grace, Period: a.flags.leasePoll}, clk)
		obs.Run(ctx, a.lease, func(o leases.Observation) { engine.Observe(conditions.InputLease, o.Fields()) })
	}()
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

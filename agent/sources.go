package agent

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/observations"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/pleg"
)

// source is a signal that feeds the engine one input: cri.Watch,
// pleg.Watch, leases.Watch and kernellog.Watch. Each hands on its input
// (a type of package observations) from its own goroutine until ctx ends.
type source interface {
	Run(ctx context.Context, emit func(observations.Input))
}

// feed is a source and the input (conditions.Input*) it feeds.
type feed struct {
	input string
	src   source
}

// criWatch probes the runtime: full cycles and the heartbeat.
func (a *Agent) criWatch() *cri.Watch {
	rt, ep := a.cfg.Runtime, a.o.Endpoint
	return &cri.Watch{Prober: a.prober, Period: rt.Period.Duration, MaxPeriod: rt.MaxPeriod.Duration,
		Heartbeat: rt.EffectiveHeartbeat(), Timeout: ep.Timeout, OnCycle: func(c cri.Cycle) {
			if c.SocketReplaced {
				klog.InfoS("Runtime socket was recreated (runtime restarted or upgraded); dialed it again", "endpoint", ep.Address)
			}
			a.health.beat()
		}}
}

// plegWatch returns nil when neither the kubelet's metrics nor the
// emulation are available.
func (a *Agent) plegWatch() (*pleg.Watch, error) {
	f := a.cfg.PLEG
	sc, err := kubeletmetrics.ScraperFor(options.Kubelet(a.cfg.Kubelet), a.o.Node)
	if err != nil {
		return nil, err
	}
	if f.EmulationPeriod.Duration > 0 {
		a.relister = pleg.NewRelister(a.conn.Runtime, a.o.Clock, pleg.KubeletRuntimeRequestTimeout)
	}
	if sc == nil && a.relister == nil {
		return nil, nil
	}
	mon := pleg.NewMonitor(pleg.Options{Config: options.PLEG(f), Scraper: sc, Window: f.Window.Duration, Relister: a.relister,
		Metrics: pleg.NewMetrics(a.o.Registry),
		// probe the list streams only if the kubelet uses them
		OnListStreaming: func(on bool) { a.prober.ProbeStreams(on) },
		OnSnapshot:      a.watchKubeletPuts()}, a.o.Clock)
	klog.InfoS("Watching PLEG health", "kubeletMetrics", a.cfg.Kubelet.MetricsURL, "emulation", a.relister != nil)
	return &pleg.Watch{Monitor: mon, ScrapePeriod: a.cfg.Kubelet.MetricsPeriod.Duration,
		EmulationPeriod: f.EmulationPeriod.Duration, EmulationWait: a.o.Endpoint.Timeout}, nil
}

// kernelWatch compiles the kernel rules; its events go to /events.
func (a *Agent) kernelWatch() (*kernellog.Watch, error) {
	k := a.cfg.Kernel
	sets, err := options.RuleSets(k)
	if err != nil {
		return nil, err
	}
	return kernellog.NewWatch(sets, kernellog.WatchOptions{Metrics: kernellog.NewMetrics(a.o.Registry), OnEvent: a.events.add,
		Clock: a.o.Clock, Lookback: k.Lookback.Duration, Open: func(lookback time.Duration) (kernellog.Source, error) {
			src, source, err := a.o.OpenKernelLog(k.KmsgPath, lookback, a.o.Clock)
			if err == nil {
				klog.InfoS("Watching the kernel log", "source", source)
			}
			return src, err
		}})
}

// leaseWatch reads the node's Lease when a rule reads it.
func (a *Agent) leaseWatch() *leases.Watch {
	api := a.cfg.APIServer
	w := &leases.Watch{Client: a.api.client, Node: a.o.Node, Grace: api.NodeMonitorGracePeriod.Duration,
		Period: api.LeasePeriod.Duration, IdlePeriod: api.LeaseIdlePeriod.Duration, Metrics: a.api.lease, Clock: a.o.Clock,
		Nudge: a.leaseNudge}
	if h, err := leases.NewHealthz(a.cfg.Kubelet.HealthzURL); a.cfg.Kubelet.HealthzURL != "" && err == nil { // checked with the configuration
		w.Healthz, w.HealthzPeriod = h, a.cfg.Kubelet.HealthzPeriod.Duration
	}
	a.leases = w
	return w
}

// watchKubeletPuts nudges the Lease watch when the kubelet's renewals
// start failing, as its metrics count them.
func (a *Agent) watchKubeletPuts() func(*kubeletmetrics.Snapshot) {
	var puts kubeletPuts
	return func(s *kubeletmetrics.Snapshot) {
		if puts.stopped(s.Puts) {
			select {
			case a.leaseNudge <- struct{}{}:
			default:
			}
		}
	}
}

// observe hands an input to the engine: the one place an observation
// crosses the agent. What the engine makes of it reaches the Node, its
// Events, /conditions and repair through the engine's subscribers
// (Agent.subscribe), not through here.
func (a *Agent) observe(obs observations.Input) {
	a.engine.Observe(obs)
}

package main

import (
	"context"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kernellog"
)

// daemon is `hangwatch run` wired together.
type daemon struct {
	o          *runOptions
	ep         cri.Endpoint
	clk        clock.WithTicker
	conn       *cri.Conn
	prober     *cri.Prober
	criMetrics *cri.Metrics
	engine     *conditions.Engine
	conds      *conditions.Set
	events     *kernelEventLog
	kernel     *kernelWatch  // nil when the kernel log is not watched
	api        *apiReporting // nil when there is no API server
	pleg       *plegWatch    // nil without kubelet metrics and emulation
	health     *liveness
	runtime    *runtimeView
	reg        metrics.KubeRegistry
	reloader   *configReloader // nil without --config
}

func (o *runOptions) newDaemon(ep cri.Endpoint) (*daemon, error) {
	d := &daemon{o: o, ep: ep, clk: clock.RealClock{}, reg: metrics.NewKubeRegistry(), events: newKernelEventLog(200)}
	registerBuildInfo(d.reg)
	specs := o.conds.specs()
	var err error
	available := []string{conditions.InputCRI}
	var monitor *kernellog.Monitor
	if o.kernel.enabled {
		if monitor, err = d.newKernelMonitor(); err != nil {
			return nil, err
		}
		available = append(available, conditions.InputKernel)
		specs = o.conds.withKernelSpecs(specs, monitor.ConditionTypes())
	}
	if d.api, err = o.newAPIReporting(d.reg); err != nil {
		return nil, err
	}
	if d.api != nil {
		available = append(available, conditions.InputLease)
	}
	if d.conn, err = cri.Dial(ep.Address); err != nil {
		return nil, err
	}
	if d.pleg, err = d.newPLEGWatch(); err != nil {
		d.close()
		return nil, err
	}
	if d.pleg != nil {
		available = append(available, conditions.InputPLEG)
	}
	d.engine, err = conditions.NewEngine(specs, d.clk, conditions.EngineOptions{
		Available: available, Registry: d.reg, OnChange: d.api.transition, RestoredHold: restoredHolds(monitor)})
	if err != nil {
		d.close()
		return nil, err
	}
	d.conds = d.engine.Set()
	if o.conds.config != "" {
		var kernelTypes []kernellog.ConditionSpec
		if monitor != nil {
			kernelTypes = monitor.ConditionTypes()
		}
		d.reloader = newConfigReloader(d, kernelTypes)
	}
	if monitor != nil {
		d.openKernelLog(monitor)
	}
	d.criMetrics = cri.NewMetrics(d.reg, func() map[string]time.Duration { return d.prober.OldestInFlight() })
	cfg := o.rt.proberConfig(ep)
	cfg.CallLifetime = o.callLifetime
	cfg.AlternateKinds = true // every cycle, for as long as the node runs: half the per-object calls
	d.prober = cri.NewProber(d.conn.Runtime, d.conn.Image, cfg, d.clk, d.criMetrics)
	d.prober.RedialWith(d.conn.RedialIfReplaced)
	d.health = newLiveness(d.clk, o.maxPeriod+2*ep.Timeout+o.period)
	if d.kernel != nil {
		d.health.addCheck(d.kernel.check)
	}
	d.runtime = &runtimeView{observe: func(c cri.Cycle) { d.engine.Observe(conditions.InputCRI, c.Observation(ep.Timeout)) }}
	return d, nil
}

func (d *daemon) newKernelMonitor() (*kernellog.Monitor, error) {
	sets, err := d.o.kernel.ruleSets()
	if err != nil {
		return nil, err
	}
	km := kernellog.NewMetrics(d.reg)
	d.kernel = &kernelWatch{metrics: km, states: map[string]any{}, clk: d.clk}
	mon, err := buildKernelMonitor(sets, d.clk, d.kernel.observe(func(obs map[string]any) { d.engine.Observe(conditions.InputKernel, obs) }), d.events, km)
	if err != nil {
		return nil, err
	}
	d.kernel.monitor = mon
	return mon, nil
}

// openKernelLog opens /dev/kmsg (or, where a non-privileged container may
// not open the device, syslog(2)) and replays the lookback window, so the
// kernel conditions leave Unknown. Without a readable kernel log they stay
// Unknown and the rest of hangwatch runs on.
func (d *daemon) openKernelLog(mon *kernellog.Monitor) {
	k, source, err := kernellog.OpenSource(d.o.kernel.kmsgPath, d.o.kernel.lookback, d.clk)
	if err == nil {
		err = k.ReadAvailable(mon.Handle)
	}
	if err != nil {
		klog.ErrorS(err, "Kernel log not watched; its conditions stay Unknown", "path", d.o.kernel.kmsgPath)
		d.kernel = nil
		return
	}
	klog.InfoS("Watching the kernel log", "source", source)
	d.kernel.kmsg, d.kernel.lookback, d.kernel.lastRead = k, d.o.kernel.lookback, d.clk.Now()
	d.kernel.open = func(lookback time.Duration) (kernellog.Source, error) {
		src, _, err := kernellog.OpenSource(d.o.kernel.kmsgPath, lookback, d.clk)
		return src, err
	}
	d.kernel.observeAll()
	d.kernel.exportStats()
}

func (d *daemon) close() {
	d.pleg.close()
	if d.conn != nil {
		_ = d.conn.Close()
	}
	if d.kernel != nil && d.kernel.kmsg != nil {
		_ = d.kernel.kmsg.Close()
	}
}

// serve runs the HTTP server, the probe loop and the kernel watch until
// SIGTERM or SIGINT.
func (d *daemon) serve(ctx context.Context) error {
	d.o.serve.warnIfExposed()
	servers, err := d.openServers()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	serveErr := make(chan error, 2)
	servers.serve(serveErr)
	klog.InfoS("hangwatch running", "endpoint", d.ep.Address, "endpointSource", d.ep.Source, "listen", servers.addrs(),
		"period", d.o.period, "heartbeat", d.o.heartbeatPeriod(), "timeout", d.ep.Timeout, "kernelLog", d.kernel != nil, "pleg", d.pleg != nil, "node", d.api.nodeName(), "conditions", d.conds.Types())
	var wg sync.WaitGroup
	if d.o.heartbeatPeriod() > 0 {
		d.prober.VersionByHeartbeat() // before the first cycle
	}
	wg.Add(1)
	go func() { defer wg.Done(); d.probeLoop(ctx) }()
	if d.o.heartbeatPeriod() > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); d.heartbeatLoop(ctx) }()
	}
	if d.kernel != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.kernel.follow(ctx) }()
	}
	if d.pleg != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.pleg.run(ctx, d.ep.Timeout) }()
	}
	if d.api != nil {
		d.api.start(ctx, &wg, d.clk, d.conds, d.engine)
	}
	setGCPercent()
	if d.reloader != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.reloader.run(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); trimResidentSet(ctx, d.clk) }()
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = &exitError{code: 1, err: err}
		stop()
	}
	klog.InfoS("Shutting down")
	wg.Wait()
	d.api.shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := servers.shutdown(shutdownCtx); serr != nil && err == nil {
		err = &exitError{code: 1, err: serr}
	}
	return err
}

func (d *daemon) probeLoop(ctx context.Context) {
	d.prober.Run(ctx, d.o.period, d.o.maxPeriod, func(c cri.Cycle) {
		if c.SocketReplaced {
			klog.InfoS("Runtime socket was recreated (runtime restarted or upgraded); dialed it again", "endpoint", d.ep.Address)
		}
		d.criMetrics.ObserveCycle(c)
		d.health.beat()
		d.runtime.onCycle(c)
	})
}

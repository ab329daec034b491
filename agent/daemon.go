package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/hangwatch/hangwatch/kernellog"
)

// Agent is `hangwatch run` wired together.
type Agent struct {
	o          Options
	cfg        *config.Configuration
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
	secure     *securePort     // nil without --secure-listen-address
	reloader   *configReloader // nil without --config
}

// New assembles the agent; nothing runs until Run.
func New(o Options) (*Agent, error) {
	o.defaults()
	a := &Agent{o: o, cfg: o.Config.Configuration, events: newKernelEventLog(200)}
	buildinfo.Register(o.Registry)
	if err := a.assemble(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *Agent) assemble() error {
	specs := a.cfg.Specs()
	available := []string{conditions.InputCRI}
	var monitor *kernellog.Monitor
	var err error
	if a.cfg.Kernel.Enabled {
		if monitor, err = a.newKernelMonitor(); err != nil {
			return err
		}
		available = append(available, conditions.InputKernel)
		specs = a.cfg.WithKernelSpecs(specs, monitor.ConditionTypes())
	}
	if a.api, err = newAPIReporting(a.o, a.cfg); err != nil {
		return err
	}
	if a.api != nil {
		available = append(available, conditions.InputLease)
	}
	if a.conn, err = a.o.DialCRI(a.o.Endpoint.Address); err != nil {
		return err
	}
	if a.pleg, err = a.newPLEGWatch(); err != nil {
		return err
	}
	if a.pleg != nil {
		available = append(available, conditions.InputPLEG)
	}
	a.engine, err = conditions.NewEngine(specs, a.o.Clock, conditions.EngineOptions{
		Available: available, Registry: a.o.Registry, OnChange: a.api.transition, RestoredHold: restoredHolds(monitor)})
	if err != nil {
		return err
	}
	a.conds = a.engine.Set()
	if a.o.Reload != nil {
		a.reloader = newConfigReloader(a, kernelTypes(monitor))
	}
	if monitor != nil {
		a.openKernelLog(monitor)
	}
	a.newProber()
	if a.secure, err = newSecurePort(a.o, a.cfg.Server); err != nil {
		return err
	}
	return nil
}

func kernelTypes(monitor *kernellog.Monitor) []kernellog.ConditionSpec {
	if monitor == nil {
		return nil
	}
	return monitor.ConditionTypes()
}

func (a *Agent) newProber() {
	ep, rt := a.o.Endpoint, a.cfg.Runtime
	a.criMetrics = cri.NewMetrics(a.o.Registry, func() map[string]time.Duration { return a.prober.OldestInFlight() })
	cfg := rt.ProberConfig(ep)
	cfg.CallLifetime = rt.CallLifetime.Duration
	cfg.AlternateKinds = true // every cycle, for as long as the node runs: half the per-object calls
	a.prober = cri.NewProber(a.conn.Runtime, a.conn.Image, cfg, a.o.Clock, a.criMetrics)
	a.prober.RedialWith(a.conn.RedialIfReplaced)
	a.health = newLiveness(a.o.Clock, rt.MaxPeriod.Duration+2*ep.Timeout+rt.Period.Duration)
	if a.kernel != nil {
		a.health.addCheck(a.kernel.check)
	}
	a.runtime = &runtimeView{observe: func(c cri.Cycle) { a.engine.Observe(conditions.InputCRI, c.Observation(ep.Timeout)) }}
}

func (a *Agent) newKernelMonitor() (*kernellog.Monitor, error) {
	sets, err := a.cfg.Kernel.RuleSets()
	if err != nil {
		return nil, err
	}
	km := kernellog.NewMetrics(a.o.Registry)
	a.kernel = &kernelWatch{metrics: km, states: map[string]any{}, clk: a.o.Clock}
	mon, err := buildKernelMonitor(sets, a.o.Clock, a.kernel.observe(func(obs map[string]any) { a.engine.Observe(conditions.InputKernel, obs) }), a.events, km)
	if err != nil {
		return nil, err
	}
	a.kernel.monitor = mon
	return mon, nil
}

// openKernelLog opens /dev/kmsg (or, where a non-privileged container may
// not open the device, syslog(2)) and replays the lookback window, so the
// kernel conditions leave Unknown. Without a readable kernel log they stay
// Unknown and the rest of hangwatch runs on.
func (a *Agent) openKernelLog(mon *kernellog.Monitor) {
	path, lookback := a.cfg.Kernel.KmsgPath, a.cfg.Kernel.Lookback.Duration
	k, source, err := a.o.OpenKernelLog(path, lookback, a.o.Clock)
	if err == nil {
		err = k.ReadAvailable(mon.Handle)
	}
	if err != nil {
		klog.ErrorS(err, "Kernel log not watched; its conditions stay Unknown", "path", path)
		a.kernel = nil
		return
	}
	klog.InfoS("Watching the kernel log", "source", source)
	a.kernel.kmsg, a.kernel.lookback, a.kernel.lastRead = k, lookback, a.o.Clock.Now()
	a.kernel.open = func(lookback time.Duration) (kernellog.Source, error) {
		src, _, err := a.o.OpenKernelLog(path, lookback, a.o.Clock)
		return src, err
	}
	a.kernel.observeAll()
	a.kernel.exportStats()
}

// Close releases what New opened.
func (a *Agent) Close() {
	a.pleg.close()
	if a.conn != nil {
		_ = a.conn.Close()
	}
	if a.kernel != nil && a.kernel.kmsg != nil {
		_ = a.kernel.kmsg.Close()
	}
}

// Conditions are the agent's conditions as it holds them.
func (a *Agent) Conditions() []conditions.Condition { return a.conds.Snapshot() }

// Run serves and watches until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	warnIfExposed(a.cfg.Server.ListenAddress)
	servers, err := a.openServers()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	serveErr := make(chan error, 2)
	servers.serve(serveErr)
	if a.o.OnReady != nil {
		a.o.OnReady(servers.addrs())
	}
	rt := a.cfg.Runtime
	klog.InfoS("hangwatch running", "endpoint", a.o.Endpoint.Address, "endpointSource", a.o.Endpoint.Source, "listen", servers.addrs(),
		"period", rt.Period.Duration, "heartbeat", rt.EffectiveHeartbeat(), "timeout", a.o.Endpoint.Timeout, "kernelLog", a.kernel != nil, "pleg", a.pleg != nil, "node", a.api.nodeName(), "conditions", a.conds.Types())
	var wg sync.WaitGroup
	a.start(ctx, &wg)
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = &ServeError{Err: err}
		stop()
	}
	klog.InfoS("Shutting down")
	wg.Wait()
	a.api.shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := servers.shutdown(shutdownCtx); serr != nil && err == nil {
		err = &ServeError{Err: serr}
	}
	return err
}

// start runs every loop on wg until ctx ends.
func (a *Agent) start(ctx context.Context, wg *sync.WaitGroup) {
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	heartbeat := a.cfg.Runtime.EffectiveHeartbeat()
	if heartbeat > 0 {
		a.prober.VersionByHeartbeat() // before the first cycle
		run(a.heartbeatLoop)
	}
	run(a.probeLoop)
	if a.kernel != nil {
		run(a.kernel.follow)
	}
	if a.pleg != nil {
		run(func(ctx context.Context) { a.pleg.run(ctx, a.o.Endpoint.Timeout) })
	}
	if a.api != nil {
		a.api.start(ctx, wg, a.o.Clock, a.conds, a.engine)
	}
	setGCPercent()
	if a.reloader != nil {
		run(a.reloader.run)
	}
	run(func(ctx context.Context) { trimResidentSet(ctx, a.o.Clock) })
}

func (a *Agent) probeLoop(ctx context.Context) {
	rt := a.cfg.Runtime
	a.prober.Run(ctx, rt.Period.Duration, rt.MaxPeriod.Duration, func(c cri.Cycle) {
		if c.SocketReplaced {
			klog.InfoS("Runtime socket was recreated (runtime restarted or upgraded); dialed it again", "endpoint", a.o.Endpoint.Address)
		}
		a.criMetrics.ObserveCycle(c)
		a.health.beat()
		a.runtime.onCycle(c)
	})
}

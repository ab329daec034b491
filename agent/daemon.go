package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/httpauth"
	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/pleg"
	"github.com/hangwatch/hangwatch/podstarts"
	"github.com/hangwatch/hangwatch/repair"
)

// Agent is `hangwatch run` wired together.
type Agent struct {
	o           Options
	cfg         *config.Configuration
	conn        *cri.Conn
	prober      *cri.Prober
	relister    *pleg.Relister     // nil without the PLEG emulation
	podsAPI     *podstarts.PodsAPI // nil without the kubelet's Pods API
	criMetrics  *cri.Metrics
	engine      *conditions.Engine
	view        *conditions.Latest // the engine's conditions, for /conditions
	repairConds *repairConditions  // the engine's conditions, for repair; nil without the link
	feeds       []feed             // the signals, each feeding one input
	events      *kernelEventLog
	kernel      *kernellog.Watch // nil when the kernel log is not watched
	api         *apiReporting    // nil when there is no API server
	health      *liveness
	secure      *httpauth.SecureServer // nil without --secure-listen-address
	reloader    *configReloader        // nil without --config
	link        *repairLink            // nil without repair.agentSocket
	leases      *leases.Watch          // nil when the Lease is not read
	memLimit    *metrics.Gauge         // hangwatch_go_memory_limit_bytes
	// leaseNudge carries the kubelet's metrics' word that its renewals
	// fail to the Lease watch.
	leaseNudge chan struct{}
}

// New assembles the agent; nothing runs until Run.
func New(o Options) (*Agent, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	a := &Agent{o: o, cfg: o.Config.Configuration, events: newKernelEventLog(200), memLimit: newMemoryLimitGauge(o.Registry),
		leaseNudge: make(chan struct{}, 1)}
	buildinfo.Register(o.Registry)
	if err := a.assemble(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// assemble builds the signals, then the engine over the inputs they give,
// then what reads the engine.
func (a *Agent) assemble() error {
	specs, err := a.signals()
	if err != nil {
		return err
	}
	available := []string{}
	for _, f := range a.feeds {
		available = append(available, f.input)
	}
	if a.api != nil {
		available = append(available, conditions.InputLease)
	}
	var holds map[string]time.Duration
	var kernelConditions []string
	if a.kernel != nil {
		holds, kernelConditions = a.kernel.RestoredHolds(), options.KernelConditionNames(a.kernel.Monitor().ConditionTypes())
	}
	a.engine, err = conditions.NewEngine(specs, a.o.Clock, conditions.EngineOptions{
		Available: available, Registry: a.o.Registry, RestoredHold: holds,
		Params: a.cfg.RuleParams(), KernelConditions: kernelConditions, BootTime: a.bootTime()})
	if err != nil {
		return err
	}
	a.subscribe()
	if a.api != nil && a.engine.Reads(conditions.InputLease) { // else spare the API server the reads
		a.feeds = append(a.feeds, feed{conditions.InputLease, a.leaseWatch()})
	}
	a.newRepairLink()
	if a.o.Reload != nil {
		a.reloader = newConfigReloader(a)
	}
	a.openKernelLog()
	a.secure, err = newSecurePort(a.o, a.cfg.Server)
	return err
}

// signals builds each signal and returns the condition rules for the
// inputs they give. The Lease's input is available with an API server,
// but read only when a rule reads it (assemble).
func (a *Agent) signals() ([]conditions.Spec, error) {
	specs := options.Specs(a.cfg)
	var err error
	if a.cfg.Kernel.Enabled {
		if a.kernel, err = a.kernelWatch(); err != nil {
			return nil, err
		}
		a.kernel.Monitor().SetSilenced(a.cfg.SilencedReasons)
		a.checkGPUInventory()
		specs = options.WithKernelSpecs(a.cfg, specs, a.kernel.Monitor().ConditionTypes())
	}
	if a.api, err = newAPIReporting(a.o, a.cfg); err != nil {
		return nil, err
	}
	if a.conn, err = a.o.DialCRI(a.o.Endpoint.Address); err != nil {
		return nil, err
	}
	a.newProber()
	a.feeds = append(a.feeds, feed{conditions.InputCRI, a.criWatch()})
	if a.kernel != nil {
		a.feeds = append(a.feeds, feed{conditions.InputKernel, a.kernel})
	}
	if ps, err := a.podStartsWatch(); err != nil {
		return nil, err
	} else if ps != nil {
		a.feeds = append(a.feeds, feed{conditions.InputPodStarts, ps})
	}
	pw, err := a.plegWatch()
	if err != nil || pw == nil {
		return specs, err
	}
	a.feeds = append(a.feeds, feed{conditions.InputPLEG, pw})
	return specs, nil
}

func (a *Agent) newProber() {
	ep, rt := a.o.Endpoint, a.cfg.Runtime
	a.criMetrics = cri.NewMetrics(a.o.Registry, func() map[string]time.Duration { return a.prober.OldestInFlight() })
	cfg := options.Prober(rt, ep)
	cfg.CallLifetime = rt.CallLifetime.Duration
	cfg.AlternateKinds = true // every cycle, for as long as the node runs: half the per-object calls
	a.prober = cri.NewProber(a.conn.Runtime, a.conn.Image, cfg, a.o.Clock, a.criMetrics)
	a.prober.RedialWith(a.conn.RedialIfReplaced)
	a.health = newLiveness(a.o.Clock, rt.MaxPeriod.Duration+2*ep.Timeout+rt.Period.Duration)
}

// openKernelLog opens /dev/kmsg (or, where a non-privileged container may
// not open the device, syslog(2)) and replays the lookback window, so the
// kernel conditions leave Unknown before the Node's are read back. Without
// a readable kernel log they stay Unknown and the rest of hangwatch runs
// on.
func (a *Agent) openKernelLog() {
	if a.kernel == nil {
		return
	}
	if err := a.kernel.Open(); err != nil {
		klog.ErrorS(err, "Kernel log not watched; its conditions stay Unknown", "path", a.cfg.Kernel.KmsgPath)
		a.feeds = slices.DeleteFunc(a.feeds, func(f feed) bool { return f.input == conditions.InputKernel })
		a.kernel = nil
		return
	}
	a.observe(a.kernel.Input())
	a.health.addCheck(a.kernel.Check)
}

// Close releases what New opened.
func (a *Agent) Close() {
	if a.relister != nil {
		a.relister.Close()
	}
	if a.podsAPI != nil {
		_ = a.podsAPI.Close()
	}
	if a.conn != nil {
		_ = a.conn.Close()
	}
	if a.kernel != nil {
		a.kernel.Close()
	}
}

// subscribe hands what the engine judges to its consumers, all the same
// way: the HTTP view and, with an API server, the Node's status writer
// and its Events. Repair's view subscribes with the link
// (newRepairLink).
func (a *Agent) subscribe() {
	a.view = &conditions.Latest{}
	a.engine.Subscribe(a.view)
	if a.api != nil {
		a.api.subscribe(a.engine, a.o.Clock)
	}
}

// Conditions are the agent's conditions as it holds them.
func (a *Agent) Conditions() []conditions.Condition { return a.view.Conditions() }

// Run serves and watches until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	warnIfExposed(a.cfg.Server.ListenAddress)
	servers, err := a.openServers()
	if err != nil {
		return err
	}
	if a.link != nil {
		if err := a.link.listen(); err != nil {
			_ = servers.Shutdown(context.Background())
			return serveError("%w", err)
		}
		klog.InfoS("Serving the repair process's link", "socket", a.link.path)
	}
	serveErr, linkErr := servers.Start(a.o.OnReady), make(chan error, 1)
	if a.link != nil {
		a.link.serve(linkErr)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	rt := a.cfg.Runtime
	klog.InfoS("hangwatch running", "endpoint", a.o.Endpoint.Address, "endpointSource", a.o.Endpoint.Source, "listen", servers.Addrs(),
		"period", rt.Period.Duration, "heartbeat", rt.EffectiveHeartbeat(), "timeout", a.o.Endpoint.Timeout, "kernelLog", a.kernel != nil, "pleg", a.has(conditions.InputPLEG), "node", a.api.nodeName(), "conditions", a.view.Types())
	var wg sync.WaitGroup
	a.start(ctx, &wg)
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = &ServeError{Err: err}
		stop()
	case err = <-linkErr:
		err = &ServeError{Err: err}
		stop()
	}
	klog.InfoS("Shutting down")
	wg.Wait()
	a.api.shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a.link != nil {
		a.link.shutdown(shutdownCtx)
	}
	if serr := servers.Shutdown(shutdownCtx); serr != nil && err == nil {
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
	// Before the first CRI lists: their answers are what may need the room.
	setGCPercent()
	a.memLimit.Set(float64(setMemoryLimit(a.o.Cgroup)))
	for _, f := range a.feeds {
		run(func(ctx context.Context) { f.src.Run(ctx, a.observe) })
	}
	if a.api != nil {
		run(a.api.report)
	}
	if a.reloader != nil {
		run(a.reloader.run)
	}
	run(func(ctx context.Context) { trimResidentSet(ctx, a.o.Clock) })
}

// has tells whether a signal feeds input.
func (a *Agent) has(input string) bool {
	return slices.ContainsFunc(a.feeds, func(f feed) bool { return f.input == input })
}

// bootTime is when the node's kernel booted, on the agent's clock; zero
// when it cannot be read (every restored kernel condition is then held).
func (a *Agent) bootTime() time.Time {
	since := a.o.SinceBoot
	if since == nil {
		since = func() (time.Duration, error) {
			b, err := repair.HostBoot()
			return b.Since, err
		}
	}
	d, err := since()
	if err != nil {
		klog.ErrorS(err, "Reading the time since boot failed; kernel conditions read back from the Node are held as if raised in this boot")
		return time.Time{}
	}
	return a.o.Clock.Now().Add(-d)
}

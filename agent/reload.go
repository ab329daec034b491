package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/internal/filewatch"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/options"
)

// configPoll is how often the reloader reads --config for a change: a
// ConfigMap update arrives as a swap of its ..data symlink, which a read
// through the path sees at once. A file of a few KiB, twice a second.
const configPoll = 500 * time.Millisecond

// configReloader reloads the condition rules of --config when the file
// changes and on SIGHUP (filewatch). A file that fails the checks of
// `config check` is refused, the running rules stay, and the refusal is
// logged, counted in hangwatch_config_last_reload_successful and told as a
// Warning Event.
type configReloader struct {
	Reload
	running     *config.Configuration
	engine      *conditions.Engine
	kernelTypes []kernellog.ConditionSpec // nil without the kernel log
	silence     func(reasons []string)    // the kernel rules' (Monitor.SetSilenced)
	warn        func(reason, message string)
	clk         clock.WithTicker
	ok, okTime  *metrics.Gauge
	watch       filewatch.Watcher
	// leaseIdle: there is an API server but no rule read the Lease at
	// start, so it is not being read (Agent.assemble adds no Lease feed).
	leaseIdle bool
}

func newConfigReloader(a *Agent) *configReloader {
	var kernelTypes []kernellog.ConditionSpec
	silence := func([]string) {}
	if a.kernel != nil {
		kernelTypes, silence = a.kernel.Monitor().ConditionTypes(), a.kernel.Monitor().SetSilenced
	}
	r := &configReloader{Reload: *a.o.Reload, running: a.cfg, engine: a.engine, kernelTypes: kernelTypes, silence: silence, clk: a.o.Clock,
		warn: func(string, string) {},
		ok: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_config_last_reload_successful", StabilityLevel: metrics.ALPHA,
			Help: "1 when the last load of --config (at start or a reload) succeeded, 0 when the last reload was refused."}),
		okTime: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_config_last_reload_success_timestamp_seconds", StabilityLevel: metrics.ALPHA,
			Help: "When --config was last loaded successfully, in seconds since the Unix epoch."})}
	r.watch = filewatch.Watcher{Path: r.Path, Read: config.ReadFile, Poll: configPoll, Clock: a.o.Clock, Signal: r.Signal,
		Forced: func() { klog.InfoS("SIGHUP: reloading the config file", "path", r.Path) }, Apply: r.apply, Refused: r.refuse}
	r.watch.RunningSum(a.o.Config.Sum) // the file as start-up read it: a change since is reloaded
	a.o.Registry.MustRegister(r.ok, r.okTime)
	if a.api != nil {
		r.warn = a.api.events.Warning
		r.leaseIdle = !a.engine.Reads(conditions.InputLease)
	}
	r.ok.Set(1)
	r.okTime.Set(float64(a.o.Clock.Now().Unix()))
	return r
}

// run polls the file and listens for SIGHUP until ctx ends.
func (r *configReloader) run(ctx context.Context) { r.watch.Run(ctx) }

// apply loads new content and puts its rules in the engine.
func (r *configReloader) apply(raw []byte) error {
	c, err := r.Load(raw)
	if err != nil {
		return err
	}
	specs := options.Specs(c.Configuration)
	if r.kernelTypes != nil {
		specs = options.WithKernelSpecs(c.Configuration, specs, r.kernelTypes)
	}
	r.silence(c.SilencedReasons) // first, so the rules judge the kernel conditions as silenced
	res, err := r.engine.Reload(specs, c.RuleParams())
	if err != nil {
		r.silence(r.running.SilencedReasons)
		return err
	}
	if !slices.Equal(r.running.SilencedReasons, c.SilencedReasons) {
		klog.InfoS("Silenced reasons changed", "silenced", c.SilencedReasons)
	}
	restart := changedSections(r.running, c.Configuration)
	r.running = c.Configuration
	r.ok.Set(1)
	r.okTime.Set(float64(r.clk.Now().Unix()))
	klog.InfoS("Reloaded the config file's condition rules", "path", r.Path,
		"kept", res.Kept, "changed", res.Changed, "added", res.Added, "removed", res.Removed)
	if len(res.Removed) > 0 {
		klog.InfoS("Conditions without a rule after the reload are no longer written; the Node keeps their last state", "types", res.Removed)
	}
	if r.leaseIdle && r.engine.Reads(conditions.InputLease) {
		klog.InfoS("A reloaded rule reads the node Lease, which hangwatch started without reading; restart hangwatch to read it")
	}
	if len(restart) > 0 {
		klog.InfoS("The config file changed settings a reload does not apply; restart hangwatch to apply them", "sections", restart)
	}
	return nil
}

func (r *configReloader) refuse(err error) {
	r.ok.Set(0)
	klog.ErrorS(err, "Config reload refused; the running rules stay", "path", r.Path)
	r.warn("ConfigReloadFailed", fmt.Sprintf("hangwatch refused the new %s; the running rules stay: %v", r.Path, err))
}

// appliedAtOnce are the sections a reload applies: the knobs of the rules (runtimeHung's thresholds, kubeletUnresponsive's
// share, read as params).
// repair's settings are the repair process's, which reloads them itself.
var appliedAtOnce = map[string]bool{"repair": true, "runtimeHung": true, "kubeletUnresponsive": true}

// changedSections names the settings sections (all but conditions) that
// differ between the running configuration and c and that a reload does
// not apply; a nil running one stands for the defaults.
func changedSections(running, c *config.Configuration) []string {
	if running == nil {
		running = config.Default()
	}
	before, after := sectionsOf(running.Settings), sectionsOf(c.Settings)
	var out []string
	for name, v := range after {
		if !appliedAtOnce[name] && !bytes.Equal(v, before[name]) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func sectionsOf(s config.Settings) map[string]json.RawMessage {
	raw, err := json.Marshal(s)
	out := map[string]json.RawMessage{}
	if err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

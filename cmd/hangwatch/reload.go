package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/kernellog"
)

// configPoll is how often the reloader reads --config for a change: a
// ConfigMap update arrives as a swap of its ..data symlink, which a read
// through the path sees at once. A file of a few KiB, twice a second.
const configPoll = 500 * time.Millisecond

// maxConfigBytes bounds the config file a reload reads.
const maxConfigBytes = 1 << 20

// configReloader reloads the condition rules of --config when the file
// changes and on SIGHUP. A file that fails the checks of `config check`
// is refused, the running rules stay, and the refusal is logged, counted
// in hangwatch_config_last_reload_successful and told as a Warning Event.
type configReloader struct {
	conds       conditionFlags // the flags as started; file is replaced per reload
	engine      *conditions.Engine
	kernelTypes []kernellog.ConditionSpec // nil without the kernel log
	warn        func(reason, message string)
	clk         clock.WithTicker
	ok, okTime  *metrics.Gauge
	sum         [sha256.Size]byte
	// leaseIdle: there is an API server but no rule read the Lease at
	// start, so it is not being read (apiReporting.start).
	leaseIdle bool
}

func newConfigReloader(d *daemon, kernelTypes []kernellog.ConditionSpec) *configReloader {
	r := &configReloader{conds: d.o.conds, engine: d.engine, kernelTypes: kernelTypes, clk: d.clk,
		warn: func(string, string) {},
		ok: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_config_last_reload_successful", StabilityLevel: metrics.ALPHA,
			Help: "1 when the last load of --config (at start or a reload) succeeded, 0 when the last reload was refused."}),
		okTime: metrics.NewGauge(&metrics.GaugeOpts{Name: "hangwatch_config_last_reload_success_timestamp_seconds", StabilityLevel: metrics.ALPHA,
			Help: "When --config was last loaded successfully, in seconds since the Unix epoch."})}
	d.reg.MustRegister(r.ok, r.okTime)
	if d.api != nil {
		r.warn = d.api.events.Warning
		r.leaseIdle = !d.engine.Reads(conditions.InputLease)
	}
	if r.conds.file != nil {
		r.sum = r.conds.file.sum // the file as start-up read it: a change since is reloaded
	}
	r.ok.Set(1)
	r.okTime.Set(float64(d.clk.Now().Unix()))
	return r
}

// run polls the file and listens for SIGHUP until ctx ends.
func (r *configReloader) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := r.clk.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			klog.InfoS("SIGHUP: reloading the config file", "path", r.conds.config)
			r.check(true)
		case <-tick.C():
			r.check(false)
		}
	}
}

// check reloads when the file's content changed, or always when forced.
func (r *configReloader) check(force bool) {
	raw, err := readConfigBytes(r.conds.config)
	if err != nil {
		if force {
			r.refuse(err)
		}
		return // a ConfigMap mid-swap, say: the next poll reads it again
	}
	sum := sha256.Sum256(raw)
	if sum == r.sum && !force {
		return
	}
	r.sum = sum
	r.reload(raw)
}

// reload checks the file as `config check` does and installs its rules.
func (r *configReloader) reload(raw []byte) {
	c, errs, err := decodeConfigBytes(raw, r.conds.config, r.conds.configName())
	if err == nil && len(errs) > 0 {
		err = fmt.Errorf("%s %s:\n%w", r.conds.configName(), r.conds.config, errors.Join(errs...))
	}
	if err != nil {
		r.refuse(err)
		return
	}
	restart := changedSections(r.conds.file, c)
	f := r.conds
	f.file = c
	specs := f.specs()
	if r.kernelTypes != nil {
		specs = f.withKernelSpecs(specs, r.kernelTypes)
	}
	res, err := r.engine.Reload(specs)
	if err != nil {
		r.refuse(err)
		return
	}
	r.ok.Set(1)
	r.okTime.Set(float64(r.clk.Now().Unix()))
	klog.InfoS("Reloaded the config file's condition rules", "path", r.conds.config,
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
}

func (r *configReloader) refuse(err error) {
	r.ok.Set(0)
	klog.ErrorS(err, "Config reload refused; the running rules stay", "path", r.conds.config)
	r.warn("ConfigReloadFailed", fmt.Sprintf("hangwatch refused the new %s; the running rules stay: %v", r.conds.config, err))
}

// changedSections names the config file's settings sections (all but
// conditions) that differ between the running file and c.
func changedSections(running, c *configFile) []string {
	var before, after map[string]json.RawMessage
	if running != nil {
		before = sectionsOf(running.settings)
	}
	after = sectionsOf(c.settings)
	var out []string
	for name, v := range after {
		if !bytes.Equal(v, before[name]) {
			out = append(out, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sectionsOf(s settings) map[string]json.RawMessage {
	raw, err := json.Marshal(s)
	out := map[string]json.RawMessage{}
	if err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

// readConfigBytes reads the config file, at most maxConfigBytes.
func readConfigBytes(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxConfigBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", path, maxConfigBytes)
	}
	return raw, nil
}

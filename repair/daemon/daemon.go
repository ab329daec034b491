// Package daemon assembles `hangwatch repair`, the repair process: the
// agent's link, the repairer (the second rung: a restart through systemd)
// and, where the configuration asks for it, the fencer (the fourth rung's
// node side), from one loaded configuration, on an injected clock, with
// the repair settings reloaded when the file changes.
package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/fence"
	"github.com/hangwatch/hangwatch/internal/filewatch"
	"github.com/hangwatch/hangwatch/nodelink"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/repair"
)

// configPoll is how often the repair process looks at its --config.
const configPoll = 2 * time.Second

// Options are what the repair process runs from.
type Options struct {
	// Config is the configuration loaded at start.
	Config *config.Loaded
	// Reload reloads the repair settings of the file; nil: no file.
	Reload *Reload
	// Clock times everything; nil: the real one.
	Clock clock.WithTicker
}

// Reload says where the config file is and how it loads.
type Reload struct {
	Path string
	// Load loads new content of the file as the start did.
	Load func(raw []byte) (*config.Loaded, error)
	// Signal forces a reload (SIGHUP); nil: polling only.
	Signal <-chan os.Signal
}

// Run runs the repair process until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	loaded := o.Config
	s := loaded.Repair
	if s.AgentSocket == "" {
		return fmt.Errorf(`repair.agentSocket "": must name the agent's socket (hangwatch run serves its view there)`)
	}
	ep, err := cri.ResolveEndpoint(options.Endpoint(loaded.Runtime))
	if err != nil {
		return err
	}
	m, link := repair.NewMetrics(), repair.NewAgentLink(s.AgentSocket)
	r := repair.New(repair.Options{Settings: options.Repair(s), Clock: o.Clock, Conditions: link.Conditions,
		Unanswered:  map[repair.Target]nodelink.Silence{repair.TargetRuntime: link.Silence(repair.TargetRuntime), repair.TargetKubelet: link.Silence(repair.TargetKubelet)},
		Maintenance: link.Maintenance, Fleet: link, CRISocket: ep.Address, KubeletHealthzPort: repair.PortOf(loaded.Kubelet.HealthzURL),
		Metrics: m, Notify: link})
	f := fence.NewFencer(fence.FencerOptions{Settings: options.Fence(s), Clock: o.Clock, Conditions: link.Conditions,
		Silence: link.LifecycleSilence(), GivenUp: func() (bool, string) { return r.GivenUp(repair.TargetRuntime) },
		Restarted: func() bool { return r.Restarted(repair.TargetRuntime) },
		Probe:     fence.ProbeRuntime(ep.Address), Maintenance: link.Maintenance, Link: link, Notify: link})
	klog.InfoS("hangwatch repair running", "agentSocket", s.AgentSocket, "endpoint", ep.Address, "enabled", s.Enabled, "dryRun", s.DryRun,
		"restartRuntimeAfter", s.RestartRuntimeAfter.Duration, "restartKubeletAfter", s.RestartKubeletAfter.Duration,
		"maxRestartsPerHour", s.MaxRestartsPerHour, "systemdSocket", s.SystemdSocket, "stateFile", s.StateFile,
		"fence", s.Fence, "fenceDryRun", s.FenceDryRun, "cgroupRoot", s.CgroupRoot, "kubeletRootDir", s.KubeletRootDir)
	if o.Reload != nil {
		w := watcher(o, r, f)
		go w.Run(ctx)
	}
	link.Run(ctx, r, f.Step, m)
	return nil
}

// watcher applies the repair settings of the file when it changes (polled)
// and on SIGHUP; a file that fails the checks of `config check` is
// refused and the running settings stay.
func watcher(o Options, r *repair.Repairer, f *fence.Fencer) *filewatch.Watcher {
	w := &filewatch.Watcher{Path: o.Reload.Path, Read: config.ReadFile, Poll: configPoll, Clock: o.Clock, Signal: o.Reload.Signal,
		Apply: func(raw []byte) error {
			loaded, err := o.Reload.Load(raw)
			if err != nil {
				return err
			}
			r.Update(options.Repair(loaded.Repair))
			f.Update(options.Fence(loaded.Repair))
			klog.InfoS("Reloaded the repair settings", "path", o.Reload.Path, "enabled", loaded.Repair.Enabled, "dryRun", loaded.Repair.DryRun)
			return nil
		},
		Refused: func(err error) {
			klog.ErrorS(err, "Config reload refused; the running repair settings stay", "path", o.Reload.Path)
		}}
	w.RunningSum(o.Config.Sum)
	return w
}

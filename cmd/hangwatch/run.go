package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type runOptions struct {
	rt           runtimeFlags
	period       time.Duration
	heartbeat    time.Duration
	maxPeriod    time.Duration
	callLifetime time.Duration
	serve        serveFlags
	kernel       kernelFlags
	conds        conditionFlags
	api          apiFlags
	pleg         plegFlags
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Probe the container runtime continuously and export RuntimeHung, /metrics and /conditions",
		Long: `run probes the container runtime every --period, reports a CRI call that has
not answered within --timeout while it is still in flight, keeps RuntimeHung
(True when a call is hung or the runtime is unreachable) and serves
/metrics, /healthz, /conditions and /events on --listen-address. With
--kernel (the default) it also follows /dev/kmsg through the kernel rules:
KernelDeadlock (or the conditions of the --kernel-rules files) and events.
PLEGUnhealthy comes from hangwatch's own emulation of the kubelet's PLEG
relist (every --pleg-emulation-period) and, with --kubelet-metrics-url,
from the kubelet's kubelet_pleg_* metrics.
SIGTERM or SIGINT stops it gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromFile, err := o.configure(cmd.Flags())
			if err != nil {
				return err
			}
			_, timeoutFromFile := fromFile["timeout"]
			return o.run(cmd.Context(), cmd.Flags().Changed("timeout") || timeoutFromFile)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.rt.add(fs)
	fs.DurationVar(&o.period, "period", 30*time.Second, "time between full probe cycles (every probed call; backs off to --max-period while the runtime is slow)")
	fs.DurationVar(&o.heartbeat, "heartbeat-period", 2500*time.Millisecond, "time between heartbeats: one Version call, tracked in flight, that never backs off, so a frozen runtime is RuntimeHung within this plus --timeout; 0, or a value not shorter than --period, turns it off")
	fs.DurationVar(&o.maxPeriod, "max-period", 60*time.Second, "longest time between cycles while backing off from a slow or hung runtime")
	fs.DurationVar(&o.callLifetime, "call-lifetime", 2*time.Minute, "how long a hung call stays out (tracked in flight, not sent again) before it is cancelled; the kubelet waits 2m")
	o.serve.add(fs)
	o.kernel.add(fs)
	o.conds.add(fs)
	o.api.add(fs)
	o.pleg.add(fs)
}

// configure applies --config under the command line's flags and checks
// every value, reporting all problems at once, each named by the file's
// path when the file set it. It returns the flags the file set.
func (o *runOptions) configure(fs *pflag.FlagSet) (map[string]string, error) {
	fromFile, fileProblems, err := o.applyConfig(fs)
	if err != nil {
		return nil, err
	}
	p := problems(fileProblems)
	p.check(o.period <= 0, "--period", o.period, "must be positive")
	p.check(o.period > 0 && o.maxPeriod < o.period, "--max-period", o.maxPeriod, "must not be shorter than --period")
	p.check(o.heartbeat < 0 || (o.heartbeat > 0 && o.heartbeat < 500*time.Millisecond), "--heartbeat-period", o.heartbeat, "must be 0 (off) or at least 500ms")
	p.check(o.callLifetime < o.rt.timeout, "--call-lifetime", o.callLifetime, "must not be shorter than --timeout")
	p.add(o.conds.validate(fs, fromFile))
	p.add(o.api.validate())
	p.add(o.serve.validate())
	p.add(o.pleg.validate())
	p.add(o.rt.validate())
	if err := renameFileFields(p.err(), fromFile); err != nil {
		if o.conds.config != "" {
			return nil, fmt.Errorf("invalid configuration (%s %s and flags):\n%w", o.conds.configName(), o.conds.config, err)
		}
		return nil, err
	}
	return fromFile, nil
}

// heartbeatPeriod is the heartbeat in effect: none when it would come no
// more often than the full cycles, which already call Version.
func (o *runOptions) heartbeatPeriod() time.Duration {
	if o.heartbeat >= o.period {
		return 0
	}
	return o.heartbeat
}

func (o *runOptions) run(ctx context.Context, timeoutSet bool) error {
	ep, err := o.rt.resolve(timeoutSet)
	if err != nil {
		return err
	}
	if o.callLifetime < ep.Timeout {
		return fieldError("--call-lifetime", o.callLifetime, "must not be shorter than --timeout")
	}
	d, err := o.newDaemon(ep)
	if err != nil {
		return err
	}
	defer d.close()
	return d.serve(ctx)
}

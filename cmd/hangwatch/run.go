package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/agent"
	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/options"
)

func newRunCommand() *cobra.Command {
	var configPath string
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
With --config, the file's condition rules are reloaded when it changes and
on SIGHUP. SIGTERM or SIGINT stops it gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.NeverBlockOnLogs(os.Stderr); err != nil {
				return err
			}
			return withConfig(cmd, configPath, func(loader *config.Loader, loaded *config.Loaded) error {
				return runAgent(cmd, loader, loaded)
			})
		},
	}
	addRunFlags(cmd.Flags(), &configPath)
	return cmd
}

// withConfig loads --config with the command line's flags over it, as run
// and repair both start, and hands it to start.
func withConfig(cmd *cobra.Command, configPath string, start func(*config.Loader, *config.Loaded) error) error {
	loader := &config.Loader{Path: configPath, Named: "--config", Flags: cmd.Flags(), Check: options.Check}
	loaded, err := loader.Load()
	if err != nil {
		return err
	}
	return start(loader, loaded)
}

// addRunFlags adds --config and a flag for every setting.
func addRunFlags(fs *pflag.FlagSet, configPath *string) {
	fs.StringVar(configPath, "config", "", "HangwatchConfiguration file ("+config.APIVersion+"); flags given override it")
	config.AddFlags(fs, config.Default())
}

func runAgent(cmd *cobra.Command, loader *config.Loader, loaded *config.Loaded) error {
	opts, err := agentOptions(loaded)
	if err != nil {
		return err
	}
	if loader.Path != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		opts.Reload = &agent.Reload{Path: loader.Path, Load: loader.LoadBytes, Signal: hup}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = agent.Run(ctx, opts)
	if se := (*agent.ServeError)(nil); errors.As(err, &se) {
		return cli.Exit(1, err)
	}
	return err
}

// agentOptions settles what the configuration leaves to the node: the CRI
// endpoint, the node's name and the API server.
func agentOptions(c *config.Loaded) (agent.Options, error) {
	ep, err := cri.ResolveEndpoint(options.Endpoint(c.Runtime))
	if err != nil {
		return agent.Options{}, err
	}
	if c.Runtime.CallLifetime.Duration < ep.Timeout { // crictl's config may have set the timeout
		return agent.Options{}, fieldError("--call-lifetime", c.Runtime.CallLifetime.Duration, "must not be shorter than --timeout")
	}
	node, err := apiclient.NodeName(c.APIServer.NodeName)
	if err != nil {
		return agent.Options{}, err
	}
	api, err := apiclient.RESTConfig(c.APIServer.Kubeconfig, float32(c.APIServer.QPS), c.APIServer.Burst)
	if err != nil {
		return agent.Options{}, err
	}
	return agent.Options{Config: c, Endpoint: ep, Node: node, API: api}, nil
}

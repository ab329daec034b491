package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/repair/daemon"
)

func newRepairCommand() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Restart a hung runtime or a kubelet that stopped answering, through systemd, on the agent's view",
		Long: `repair is the privileged half of the recovery ladder's second rung, in a
process of its own: it needs hostPID and systemd's private socket, and it
listens on no port and holds no API credential. Every second it reads the
agent's view (the node's conditions and how long the runtime and the
kubelet have given no answer) over repair.agentSocket, the Unix socket that
` + "`hangwatch run`" + ` serves, and restarts what the checks of docs/remediation.md
("Repair") allow. The agent writes its Events, reads the Node for
maintenance, takes the fleet's slots and exports its metrics. Without the
view nothing is restarted. It takes the same --config and flags as run and
reloads the repair settings when the file changes and on SIGHUP; SIGTERM or
SIGINT stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.NeverBlockOnLogs(os.Stderr); err != nil {
				return err
			}
			return withConfig(cmd, configPath, func(loader *config.Loader, loaded *config.Loaded) error {
				return runRepair(cmd.Context(), loader, loaded)
			})
		},
	}
	addRunFlags(cmd.Flags(), &configPath)
	return cmd
}

func runRepair(ctx context.Context, loader *config.Loader, loaded *config.Loaded) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	o := daemon.Options{Config: loaded}
	if loader.Path != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		o.Reload = &daemon.Reload{Path: loader.Path, Load: loader.LoadBytes, Signal: hup}
	}
	if err := daemon.Run(ctx, o); err != nil {
		return err
	}
	klog.InfoS("Shutting down")
	return nil
}

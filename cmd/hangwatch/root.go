package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	var logs logFlags
	root := &cobra.Command{
		Use:   "hangwatch",
		Short: "Catch container runtime, PLEG, kubelet and kernel hangs before the node goes NotReady",
		Long: `hangwatch times the CRI calls the kubelet depends on, directly over the runtime's
socket, and reports a call that hangs while it is still in flight.

  hangwatch diag    one-shot check of the container runtime, crictl-style
  hangwatch run     the daemon: probes continuously, serves /metrics, /conditions and /events`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return logs.apply()
		},
	}
	logs.add(root.PersistentFlags())
	root.AddCommand(newDiagCommand(), newRunCommand(), newRepairCommand(), newRulesCommand(), newConfigCommand(), newVersionCommand())
	return root
}

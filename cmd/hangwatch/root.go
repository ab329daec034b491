package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
)

func newRootCommand() *cobra.Command {
	logCfg := logsapi.NewLoggingConfiguration()
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
			return logsapi.ValidateAndApply(logCfg, nil)
		},
	}
	logsapi.AddFlags(logCfg, root.PersistentFlags())
	hideAlphaLogFlags(root.PersistentFlags())
	root.AddCommand(newDiagCommand(), newRunCommand(), newRulesCommand(), newConfigCommand(), newVersionCommand())
	return root
}

// hideAlphaLogFlags hides klog's [Alpha] output-buffer options from --help
// (they still work): they are for the kubelet's log volume, not hangwatch's.
func hideAlphaLogFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Usage, "[Alpha]") {
			_ = fs.MarkHidden(f.Name)
		}
	})
}

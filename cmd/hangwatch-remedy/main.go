// Command hangwatch-remedy turns hangwatch's conditions on the Nodes into
// early recovery: it taints a sick node NoSchedule, evicts its pods
// through the Eviction API, and takes the taint away once the node is
// well, within guards against mass action (package remedy). It runs in
// the cluster as a Deployment of two replicas with leader election.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/internal/cli"
)

func main() {
	code := execute(os.Args[1:])
	klog.Flush()
	os.Exit(code)
}

// execute runs the CLI and maps its error to an exit code (cli.Execute).
func execute(args []string) int {
	root := &cobra.Command{
		Use:   "hangwatch-remedy",
		Short: "Taint and drain nodes hangwatch finds sick, with guards against mass action",
		Long: `hangwatch-remedy watches the Nodes' hangwatch conditions (RuntimeHung,
PLEGUnhealthy, KernelDeadlock, ...) and, by its policy, taints a sick node
NoSchedule (hangwatch.io/<condition>), evicts its pods through the Eviction
API (PodDisruptionBudgets hold), and removes the taint once the node is
well. maxUnhealthy, a rate limit, a per-node opt-out annotation
(hangwatch.io/remedy=disabled), a pause and a dry run guard it.

  hangwatch-remedy run            the controller (leader-elected)
  hangwatch-remedy status         the fleet table: node, condition, since, action, next
  hangwatch-remedy config check   validate a RemedyConfiguration file
  hangwatch-remedy uninstall      take what hangwatch wrote off every Node`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.AddVerbosityFlags(root.PersistentFlags())
	root.AddCommand(newRunCommand(), newStatusCommand(), newConfigCommand(), newUninstallCommand())
	return cli.Execute(root, args, os.Stderr)
}

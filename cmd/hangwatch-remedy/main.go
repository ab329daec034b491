// Command hangwatch-remedy turns hangwatch's conditions on the Nodes into
// early recovery: it taints a sick node NoSchedule, evicts its pods
// through the Eviction API, and takes the taint away once the node is
// well, within guards against mass action (package remedy). It runs in
// the cluster as a Deployment of two replicas with leader election.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// exitError ends the process with a code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	code := execute(os.Args[1:])
	klog.Flush()
	os.Exit(code)
}

// execute runs the CLI: 0 for success, an exitError's code, 2 for a usage
// or configuration error.
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
  hangwatch-remedy config check   validate a RemedyConfiguration file`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addLogFlags(root.PersistentFlags())
	root.AddCommand(newRunCommand(), newStatusCommand(), newConfigCommand())
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "Error:", ee.err)
		return ee.code
	}
	fmt.Fprintf(os.Stderr, "Error: %v\nRun 'hangwatch-remedy --help' for usage.\n", err)
	return 2
}

// addLogFlags adds klog's -v and --vmodule.
func addLogFlags(fs *pflag.FlagSet) {
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	for _, name := range []string{"v", "vmodule"} {
		pf := pflag.PFlagFromGoFlag(gfs.Lookup(name))
		if name == "v" {
			pf.Shorthand = "v"
		}
		fs.AddFlag(pf)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/remedy"
)

// uninstallPoll is the time between the uninstall's passes over the Nodes.
const uninstallPoll = 2 * time.Second

func newUninstallCommand() *cobra.Command {
	a := &api{}
	var dryRun bool
	var timeout time.Duration
	var extra []string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Take what hangwatch wrote off every Node, once hangwatch is removed",
		Long: `uninstall takes off every Node what hangwatch wrote there and nothing else:
its conditions (RuntimeHung, PLEGUnhealthy, KernelDeadlock, KubeletUnresponsive,
PodStartStuck, and those of the policy of --config; only where hangwatch's field manager wrote
them, so node-problem-detector's KernelDeadlock stays), hangwatch-remedy's taints
(hangwatch.io/<condition>=hangwatch-remedy:NoSchedule), its out-of-service
taint (node.kubernetes.io/out-of-service=hangwatch-fenced:NoExecute) and the
fence's annotations (hangwatch.io/fence-request*, hangwatch.io/fenced*,
hangwatch.io/fence-outcome). Run it after kubectl delete -k or helm
uninstall: while hangwatch runs, its agents write their conditions again.
It passes over the Nodes until two passes in a row find nothing.

Another value of a hangwatch.io/ taint key, another component's
out-of-service taint, the kubelet's conditions and your own labels and
annotations (hangwatch.io/fence=enabled, hangwatch.io/remedy=disabled)
stay. --dry-run lists what would go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := remedy.LoadPolicyFile(a.config)
			if err != nil {
				return err
			}
			types := slices.Clone(remedy.OwnedConditionTypes)
			for _, c := range p.Conditions {
				extra = append(extra, c.Type)
			}
			for _, typ := range extra {
				if err := remedy.CheckConditionType(typ); err != nil {
					return cli.Exit(2, fmt.Errorf("--condition-type %s: %w", typ, err))
				}
				if !slices.Contains(types, typ) {
					types = append(types, typ)
				}
			}
			cs, err := a.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			out := cmd.OutOrStdout()
			n, err := remedy.CleanNodes(ctx, remedy.CleanOptions{Client: cs, Types: types, DryRun: dryRun,
				Clock: clock.RealClock{}, Poll: uninstallPoll, Cleaned: printCleaned(out, dryRun)})
			verb := map[bool]string{true: "would clean", false: "cleaned"}[dryRun]
			fmt.Fprintf(out, "%s %d node(s)\n", verb, n)
			if err != nil {
				return cli.Exit(1, fmt.Errorf("hangwatch's marks are left on Nodes: %w", err))
			}
			return nil
		},
	}
	a.add(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be taken off, change nothing")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
	cmd.Flags().StringSliceVar(&extra, "condition-type", nil, "a condition type of your own to take off too, with its remedy taint (repeat it; the policy of --config adds its own)")
	return cmd
}

// printCleaned writes one line per Node cleaned (or that would be).
func printCleaned(out io.Writer, dryRun bool) func(string, []string) {
	verb := map[bool]string{true: "would remove", false: "removed"}[dryRun]
	return func(node string, what []string) {
		fmt.Fprintf(out, "node %s: %s %s\n", node, verb, strings.Join(what, ", "))
	}
}

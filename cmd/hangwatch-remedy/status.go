package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/remedy"
)

func newStatusCommand() *cobra.Command {
	a := &api{}
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the fleet table: node, condition, since, action, next action",
		Long: `status reads the Nodes and plans as the controller would with the policy of
--config (the same file the controller runs with), and prints for every
node and condition the policy covers its state, since when (the writer's
lastTransitionTime, for display), the action the controller takes now (or
the guard that holds it back) and the next one, then the pods of each
evicting node that the policy leaves there, and why.

status has not watched the Nodes: it times each condition from now, as a
newly elected controller does, so its "next" column is the longest wait.
The controller's own timeline is in its log and Events.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %s: must be table or json", output)
			}
			p, err := remedy.LoadPolicyFile(a.config)
			if err != nil {
				return err
			}
			cs, err := a.client()
			if err != nil {
				return err
			}
			list, err := cs.CoreV1().Nodes().List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return cli.Exit(1, fmt.Errorf("list nodes: %w", err))
			}
			nodes := make([]*corev1.Node, 0, len(list.Items))
			for i := range list.Items {
				nodes = append(nodes, &list.Items[i])
			}
			clocks := remedy.NewClocks()
			now := time.Now()
			clocks.Observe(p, nodes, now, true)
			plan := remedy.Decide(p, nodes, clocks, now)
			left, err := leftAlone(cmd.Context(), cs, p, plan)
			if err != nil {
				return cli.Exit(1, err)
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"matching": plan.Matching, "unhealthy": plan.Unhealthy, "maxUnhealthy": plan.Limit,
					"paused": p.Paused, "dryRun": p.DryRun, "rows": plan.Rows, "leftAlone": left})
			}
			return writeTable(cmd.OutOrStdout(), p, plan, left)
		},
	}
	a.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

// leftAlone lists, by node, the pods that the policy leaves on each node
// being evicted, or to be evicted once evictAfter has passed.
func leftAlone(ctx context.Context, cs kubernetes.Interface, p *remedy.Policy, plan remedy.Plan) (map[string][]remedy.LeftPod, error) {
	out := map[string][]remedy.LeftPod{}
	seen := map[string]bool{}
	for _, r := range plan.Rows {
		if seen[r.Node] || (r.State != remedy.StateEvicting && !strings.HasPrefix(r.Next, "evict in")) {
			continue
		}
		seen[r.Node] = true
		taint := corev1.Taint{Key: remedy.TaintKey(r.Condition), Value: remedy.TaintValue, Effect: corev1.TaintEffectNoSchedule}
		pods, err := remedy.SortNodePods(ctx, cs, p.EvictionFor(r.Condition), r.Node, taint)
		if err != nil {
			return nil, err
		}
		if len(pods.Left) > 0 {
			out[r.Node] = pods.Left
		}
	}
	return out, nil
}

func writeTable(w io.Writer, p *remedy.Policy, plan remedy.Plan, left map[string][]remedy.LeftPod) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%d of %d nodes unhealthy (maxUnhealthy %d)", plan.Unhealthy, plan.Matching, plan.Limit)
	if p.Paused {
		fmt.Fprint(tw, "; PAUSED")
	}
	if p.DryRun {
		fmt.Fprint(tw, "; DRY RUN")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tCONDITION\tSTATE\tSINCE\tACTION\tNEXT")
	for _, r := range plan.Rows {
		since := "-"
		if !r.Since.IsZero() {
			since = time.Since(r.Since).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, r.Condition, r.State, since, dash(r.Action), dash(r.Next))
	}
	if len(left) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "NODE\tPOD LEFT ALONE\tWHY")
		for _, r := range plan.Rows {
			for _, l := range left[r.Node] {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Node, l.Pod, l.Why)
			}
			delete(left, r.Node)
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package diag

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hangwatch/hangwatch/repair"
)

// writeRepairTable prints whether repair could restart each target here,
// for a person at the node.
func writeRepairTable(w io.Writer, r *repair.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := "off (repair.enabled: false)"
	if r.Enabled {
		state = "on"
		if r.DryRun {
			state = "on, dry run"
		}
	}
	fmt.Fprintf(tw, "\nREPAIR\t%s\n", state)
	fmt.Fprintln(tw, "TARGET\tUNIT\tRESTART=\tMAIN PID\tPOSSIBLE")
	for _, t := range r.Targets {
		possible := "yes"
		if !t.Possible {
			possible = "no: " + t.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Target, dash(t.Unit), dash(t.Restart), dashInt(t.MainPID), possible)
	}
	return tw.Flush()
}

func dashInt(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

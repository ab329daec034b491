package diag

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hangwatch/hangwatch/pleg"
)

// PLEGReport is PLEG health as `hangwatch diag` shows it: the assessment the
// daemon's rules read, with where the kubelet's metrics came from, or why
// it could not be made.
type PLEGReport struct {
	pleg.Assessment
	KubeletMetricsURL string `json:"kubeletMetricsURL,omitempty"`
	Error             string `json:"error,omitempty"`
}

// writeTable writes the report as diag's PLEG section.
func (r *PLEGReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Error != "" {
		fmt.Fprintf(tw, "\nPLEG\tnot checked: %s\n", r.Error)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "\nPLEG\t%s (%s): %s\n", r.Verdict, r.Reason, r.Message)
	fmt.Fprintln(tw, "SIGNAL\tSTATE\tDETAIL")
	for _, s := range r.Signals {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.State, s.Detail)
	}
	return tw.Flush()
}

package diag

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/podstarts"
)

// PodStartsReport is diag's write path section: the pods and containers
// waiting on the runtime now, from the kubelet's Pods API.
type PodStartsReport struct {
	// Verdict is Starts, Stuck (a wait of stuckAfter or more) or Unknown
	// (the kubelet's pods or the runtime's lists could not be read).
	Verdict string           `json:"verdict"`
	Waits   []podstarts.Wait `json:"waits"`
	Error   string           `json:"error,omitempty"`
}

// The write path's verdicts.
const (
	PodStartsStart   = "Starts"
	PodStartsStuck   = "Stuck"
	PodStartsUnknown = "Unknown"
)

// stuckAfter is the default rules' PodStartStuck threshold. A one-shot
// cannot see whether something else started meanwhile, as the agent's
// rule also asks; diag says so.
const stuckAfter = 45 * time.Second

// checkPodStarts lists the kubelet's pods once and asks the runtime which
// step each waits on; nil when the write path is off or the kubelet serves
// no Pods API there. Each call is bounded by timeout.
func checkPodStarts(ctx context.Context, ps config.PodStarts, rt podstarts.Runtime, timeout time.Duration, clk clock.PassiveClock) *PodStartsReport {
	if ps.PodsAPISocket == "" {
		return nil
	}
	if _, err := os.Stat(ps.PodsAPISocket); err != nil {
		return nil
	}
	r := &PodStartsReport{Verdict: PodStartsUnknown, Waits: []podstarts.Wait{}}
	api, err := podstarts.NewPodsAPI(ps.PodsAPISocket)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*timeout)
	defer cancel()
	pods, err := api.List(ctx)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	made := func(namespace, name, uid, container string) (time.Time, bool) {
		fi, err := os.Stat(filepath.Join(podstarts.LogDirectory(ps.PodLogsDir, namespace, name, uid), container))
		if err != nil {
			return time.Time{}, false
		}
		return fi.ModTime(), true
	}
	waits, err := podstarts.Waits(ctx, pods, made, rt, podstarts.ContainerdTaskDir(ps.ContainerdStateDir), clk.Now())
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Verdict = PodStartsStart
	if waits != nil {
		r.Waits = waits
	}
	if len(waits) > 0 && waits[0].WaitedSeconds >= stuckAfter.Seconds() {
		r.Verdict = PodStartsStuck
	}
	return r
}

// writeTable writes the section as diag's POD STARTS lines.
func (r *PodStartsReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case r.Error != "":
		fmt.Fprintf(tw, "\nPOD STARTS\tnot read: %s\n", r.Error)
	case len(r.Waits) == 0:
		fmt.Fprintf(tw, "\nPOD STARTS\t%s: no pod waits on the runtime\n", r.Verdict)
	default:
		fmt.Fprintf(tw, "\nPOD STARTS\t%s: %d waiting on the runtime (Stuck: one %v or more, the PodStartStuck threshold)\n", r.Verdict, len(r.Waits), stuckAfter)
		for _, wt := range r.Waits {
			what := "pod " + wt.Pod + " sandbox"
			if wt.Container != "" {
				what = "container " + wt.Pod + "/" + wt.Container + " " + wt.Step
			}
			if wt.RuntimeClass != "" {
				what += " (runtime class " + wt.RuntimeClass + ")"
			}
			fmt.Fprintf(tw, "\t%s: %.0fs\n", what, wt.WaitedSeconds)
		}
	}
	return tw.Flush()
}

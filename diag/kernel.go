package diag

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/options"
)

// KernelSection is the kernel log part of diag: matches in the lookback
// window, or why the log could not be read. It does not change the verdict.
type KernelSection struct {
	kernellog.Scan
	Error string `json:"error,omitempty"`
}

// maxKernelMatches bounds the kernel matches diag prints.
const maxKernelMatches = 20

// scanKernel reads the kernel log's lookback window through the rules.
func scanKernel(k config.Kernel, clk clock.PassiveClock) *KernelSection {
	ks := &KernelSection{}
	sets, err := options.RuleSets(k)
	if err == nil {
		ks.Scan, err = kernellog.ScanKmsg(k.KmsgPath, k.Lookback.Duration, sets, clk, maxKernelMatches)
	}
	if err != nil {
		ks.Error = err.Error()
	}
	return ks
}

func writeKernelTable(w io.Writer, k *KernelSection) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if k.Error != "" {
		fmt.Fprintf(tw, "\nKERNEL LOG\tnot read: %s\n", k.Error)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "\nKERNEL LOG\t%s, last %v: %s, %s (kernel findings do not change the verdict)\n",
		k.Source, time.Duration(k.LookbackSeconds*float64(time.Second)),
		plural(int(k.Lines), "record", "records"), plural(k.TotalMatches, "match", "matches"))
	if len(k.Matches) > 0 {
		fmt.Fprintln(tw, "TIME\tREASON\tTYPE\tLINE")
	}
	for _, m := range k.Matches {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Time.Local().Format("15:04:05"), m.Reason, m.Type, m.Line)
	}
	return tw.Flush()
}

// plural is "1 record" or "2 records".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

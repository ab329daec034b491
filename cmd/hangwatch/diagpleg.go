package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/pleg"
)

// plegSection is PLEG health as diag sees it: one emulated relist, and the
// kubelet's metrics when --kubelet-metrics-url is given (scraped before and
// after the probe cycles, so with --samples > 1 the relist p99 has a window).
type plegSection struct {
	pleg.Assessment
	KubeletMetricsURL string `json:"kubeletMetricsURL,omitempty"`
	Error             string `json:"error,omitempty"`
}

// plegDiag holds what diag needs between the two scrapes.
type plegDiag struct {
	monitor *pleg.Monitor
	rel     *cri.Relister
	url     string
	err     error
}

// startPLEG scrapes once (bounded by --kubelet-metrics-timeout) before the
// probe cycles run.
func (o *diagOptions) startPLEG(ctx context.Context, conn *cri.Conn) *plegDiag {
	pd := &plegDiag{url: o.kubelet.opts.URL}
	sc, err := o.kubelet.scraper()
	if err != nil {
		pd.err = err
		return pd
	}
	pd.rel = cri.NewRelister(conn.Runtime, clock.RealClock{}, cri.KubeletRuntimeRequestTimeout)
	pd.monitor = pleg.NewMonitor(pleg.Options{Config: pleg.DefaultConfig(), Scraper: sc, Window: time.Hour, Relister: pd.rel}, clock.RealClock{})
	pd.monitor.ScrapeOnce(ctx)
	return pd
}

// finish emulates one relist (waiting at most timeout), scrapes again when
// the probe cycles took time, and judges.
func (pd *plegDiag) finish(ctx context.Context, timeout time.Duration, samples int) *plegSection {
	if pd.err != nil {
		return &plegSection{Assessment: pleg.Assessment{Verdict: pleg.VerdictUnknown}, KubeletMetricsURL: pd.url, Error: pd.err.Error()}
	}
	defer pd.rel.Close()
	ectx, cancel := context.WithTimeout(ctx, timeout)
	pd.monitor.EmulateOnce(ectx)
	cancel()
	if samples > 1 {
		pd.monitor.ScrapeOnce(ctx)
	}
	return &plegSection{Assessment: pd.monitor.Assess(), KubeletMetricsURL: pd.url}
}

func writePLEGTable(w io.Writer, p *plegSection) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.Error != "" {
		fmt.Fprintf(tw, "\nPLEG\tnot checked: %s\n", p.Error)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "\nPLEG\t%s (%s): %s\n", p.Verdict, p.Reason, p.Message)
	fmt.Fprintln(tw, "SIGNAL\tSTATE\tDETAIL")
	for _, s := range p.Signals {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.State, s.Detail)
	}
	return tw.Flush()
}

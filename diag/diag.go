package diag

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/options"
	"github.com/hangwatch/hangwatch/repair"
)

// Options are what one diag run looks at.
type Options struct {
	// Config holds the settings; those diag has no flag for keep their
	// defaults.
	Config *config.Configuration
	// Samples is how many probe cycles run back to back (at least 1).
	Samples int
	// Clock times the calls; nil: the real one.
	Clock clock.WithTicker
	// Dial reaches systemd for the repair section; nil: its socket.
	Dial func(context.Context, string) (repair.Manager, error)
}

// Run checks the node once: it resolves the CRI endpoint, probes it
// Samples times while the PLEG check runs beside the cycles, then reads
// the kernel log (when on), the node Lease (with credentials), the pods
// waiting on the runtime (where the kubelet serves its Pods API) and whether
// repair could restart the runtime and the kubelet (when on). Only an
// endpoint that cannot be chosen or dialed is an error; whatever a section
// could not read, it reports.
func Run(ctx context.Context, o Options) (*Report, error) {
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	cfg := o.Config
	ep, err := cri.ResolveEndpoint(options.Endpoint(cfg.Runtime))
	if err != nil {
		return nil, err
	}
	conn, err := cri.Dial(ep.Address)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	p := cri.NewProber(conn.Runtime, conn.Image, options.Prober(cfg.Runtime, ep), clk, nil)
	node, nodeErr := apiclient.NodeName(cfg.APIServer.NodeName)
	pc := startPLEG(ctx, cfg.Kubelet, conn, node, nodeErr, ep.Timeout, clk)
	cycles := make([]cri.Cycle, 0, o.Samples)
	for i := 0; i < o.Samples; i++ {
		cycles = append(cycles, p.Cycle(ctx))
	}
	out := &Report{CRIReport: newCRIReport(ep, p.Config(), cycles, p.InFlight())}
	if cfg.Kernel.Enabled {
		out.Kernel = scanKernel(cfg.Kernel, clk)
	}
	out.Lease = checkLease(ctx, cfg.APIServer, node, nodeErr, clk)
	out.PLEG = pc.finish(ctx, o.Samples)
	out.PodStarts = checkPodStarts(ctx, cfg.PodStarts, conn.Runtime, ep.Timeout, clk)
	if cfg.Repair.Enabled {
		r := repair.Diagnose(ctx, options.Repair(cfg.Repair), ep.Address, cfg.Kubelet.HealthzURL, o.Dial)
		out.Repair = &r
	}
	return out, nil
}

// startPLEG starts the PLEG check beside the probe cycles.
func startPLEG(ctx context.Context, k config.Kubelet, conn *cri.Conn, node string, nodeErr error, timeout time.Duration, clk clock.WithTicker) *plegCheck {
	var sc *kubeletmetrics.Scraper
	err := nodeErr
	if err == nil {
		sc, err = kubeletmetrics.ScraperFor(options.Kubelet(k), node)
	}
	return startPLEGCheck(ctx, conn.Runtime, sc, k.MetricsURL, err, timeout, clk)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/internal/options"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/leases"
	"github.com/hangwatch/hangwatch/pleg"
	"github.com/hangwatch/hangwatch/repair"
)

type diagOptions struct {
	cfg     *config.Configuration // the settings diag has flags for; the rest default
	output  string
	samples int
}

// diagFlags are the settings diag takes.
var diagFlags = []string{"runtime-endpoint", "timeout", "crictl-config", "kubelet-config", "slow-threshold", "sample-size", "concurrency",
	"kernel", "kmsg-path", "kernel-rules", "kernel-lookback", "kubeconfig", "node-name", "node-monitor-grace-period",
	"kubelet-metrics-url", "kubelet-token-file", "kubelet-kubeconfig", "kubelet-ca-file", "kubelet-tls-server-name",
	"kubelet-insecure-skip-tls-verify", "kubelet-metrics-timeout", "repair", "repair-dry-run", "runtime-unit", "kubelet-unit", "systemd-socket"}

// diagOutput is the CRI report with the kernel log's matches beside it.
type diagOutput struct {
	cri.Report
	Kernel *kernelSection `json:"kernel,omitempty"`
	Lease  *leases.Report `json:"lease,omitempty"`
	PLEG   *pleg.Report   `json:"pleg,omitempty"`
	Repair *repair.Report `json:"repair,omitempty"`
}

// kernelSection is the kernel log part of diag: matches in the lookback
// window, or why the log could not be read. It does not change the verdict.
type kernelSection struct {
	kernellog.Scan
	Error string `json:"error,omitempty"`
}

// maxDiagKernelMatches bounds the kernel matches diag prints.
const maxDiagKernelMatches = 20

func newDiagCommand() *cobra.Command {
	o := &diagOptions{cfg: config.Default()}
	cmd := &cobra.Command{
		Use:   "diag",
		Short: "Check once whether the container runtime answers the CRI calls the kubelet depends on",
		Long: `diag times Version, Status, ListPodSandbox, ListContainers, PodSandboxStatus,
ContainerStatus and ImageFsInfo against the runtime and prints a verdict:
Healthy, Degraded (slow or erroring), Hung (a call did not answer within
--timeout) or Unreachable. It returns within about --timeout plus a second
per sample, even when the runtime is frozen.

It also emulates one PLEG relist (the CRI calls the kubelet's relist makes)
and, with --kubelet-metrics-url, reads the kubelet's kubelet_pleg_* metrics:
the PLEG section says which signals it had and what each said.

Exit codes: 0 Healthy, 1 Degraded, Hung or Unreachable (or PLEG Unhealthy),
2 usage error.`,
		Example: `  hangwatch diag
  hangwatch diag -r unix:///run/containerd/containerd.sock -t 5s -o json
  hangwatch diag --samples 5
  hangwatch diag --kubeconfig /etc/kubernetes/kubelet.conf   # adds the node Lease's age against the grace period
  hangwatch diag --repair   # adds whether repair could restart the runtime and the kubelet here (systemd, unit, Restart=)
  hangwatch diag --kubelet-metrics-url https://127.0.0.1:10250/metrics --kubelet-token-file /var/run/secrets/hangwatch/token --kubelet-ca-file /var/lib/kubelet/pki/kubelet.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	config.AddFlags(cmd.Flags(), o.cfg, diagFlags...)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().IntVar(&o.samples, "samples", 1, "probe cycles to run back to back")
	return cmd
}

// validate checks the flags as run checks them; the settings diag has no
// flag for keep their defaults, which pass.
func (o *diagOptions) validate(cmd *cobra.Command) error {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fieldError("--output", o.output, "must be table, json or yaml")
	}
	if o.samples < 1 {
		return fieldError("--samples", o.samples, "must be at least 1")
	}
	_, err := (&config.Loader{Flags: cmd.Flags()}).Load()
	return err
}

func (o *diagOptions) run(ctx context.Context, w io.Writer) error {
	ep, err := cri.ResolveEndpoint(options.Endpoint(o.cfg.Runtime))
	if err != nil {
		return err
	}
	conn, err := cri.Dial(ep.Address)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := cri.NewProber(conn.Runtime, conn.Image, options.Prober(o.cfg.Runtime, ep), clock.RealClock{}, nil)
	node, nodeErr := apiclient.NodeName(o.cfg.APIServer.NodeName)
	pd := o.diagnosePLEG(ctx, conn, node, nodeErr, ep.Timeout)
	cycles := make([]cri.Cycle, 0, o.samples)
	for i := 0; i < o.samples; i++ {
		cycles = append(cycles, p.Cycle(ctx))
	}
	report := cri.NewReport(ep, p.Config(), cycles, p.InFlight())
	out := diagOutput{Report: report}
	if o.cfg.Kernel.Enabled {
		out.Kernel = o.scanKernel()
	}
	out.Lease = o.checkLease(ctx, node, nodeErr)
	out.PLEG = pd.Finish(ctx, o.samples)
	if o.cfg.Repair.Enabled {
		r := repair.Diagnose(ctx, options.Repair(o.cfg.Repair), ep.Address, o.cfg.Kubelet.HealthzURL, nil)
		out.Repair = &r
	}
	if err := writeReport(w, o.output, out); err != nil {
		return cli.Exit(1, fmt.Errorf("write report: %w", err))
	}
	if report.Verdict != cri.VerdictHealthy || out.PLEG.Verdict == pleg.VerdictUnhealthy {
		return cli.Exit(1, nil)
	}
	return nil
}

// diagnosePLEG starts the PLEG check beside the probe cycles.
func (o *diagOptions) diagnosePLEG(ctx context.Context, conn *cri.Conn, node string, nodeErr error, timeout time.Duration) *pleg.Diagnosis {
	k := o.cfg.Kubelet
	var sc *kubeletmetrics.Scraper
	err := nodeErr
	if err == nil {
		sc, err = kubeletmetrics.ScraperFor(options.Kubelet(k), node)
	}
	return pleg.Diagnose(ctx, conn.Runtime, sc, k.MetricsURL, err, timeout)
}

// checkLease reads the Lease once when there are credentials; nil without.
// It does not change diag's verdict.
func (o *diagOptions) checkLease(ctx context.Context, node string, nodeErr error) *leases.Report {
	api := o.cfg.APIServer
	cfg, err := apiclient.RESTConfig(api.Kubeconfig, float32(api.QPS), api.Burst)
	if cfg == nil && err == nil {
		return nil
	}
	var client *apiclient.Client
	if err = errors.Join(nodeErr, err); err == nil {
		client, err = apiclient.New(cfg)
	}
	if err != nil {
		return &leases.Report{Node: node, Error: err.Error()}
	}
	return leases.Check(ctx, client, node, api.NodeMonitorGracePeriod.Duration, clock.RealClock{})
}

// scanKernel reads the kernel log's lookback window through the rules.
func (o *diagOptions) scanKernel() *kernelSection {
	ks := &kernelSection{}
	k := o.cfg.Kernel
	sets, err := options.RuleSets(k)
	if err == nil {
		ks.Scan, err = kernellog.ScanKmsg(k.KmsgPath, k.Lookback.Duration, sets, clock.RealClock{}, maxDiagKernelMatches)
	}
	if err != nil {
		ks.Error = err.Error()
	}
	return ks
}

func writeReport(w io.Writer, format string, r diagOutput) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if err := cri.WriteTable(w, r.Report); err != nil {
		return err
	}
	if r.Kernel != nil {
		if err := writeKernelTable(w, r.Kernel); err != nil {
			return err
		}
	}
	if r.Lease != nil {
		if err := r.Lease.WriteTable(w); err != nil {
			return err
		}
	}
	if r.PLEG != nil {
		if err := r.PLEG.WriteTable(w); err != nil {
			return err
		}
	}
	if r.Repair != nil {
		return r.Repair.WriteTable(w)
	}
	return nil
}

func writeKernelTable(w io.Writer, k *kernelSection) error {
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

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/diag"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/options"
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
	"kubelet-insecure-skip-tls-verify", "kubelet-metrics-timeout", "repair", "repair-dry-run", "runtime-unit", "kubelet-unit", "systemd-socket",
	"pods-api-socket", "pod-logs-dir", "containerd-state-dir"}

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
	_, err := (&config.Loader{Flags: cmd.Flags(), Check: options.Check}).Load()
	return err
}

func (o *diagOptions) run(ctx context.Context, w io.Writer) error {
	r, err := diag.Run(ctx, diag.Options{Config: o.cfg, Samples: o.samples})
	if err != nil {
		return err
	}
	if err := diag.Write(w, o.output, r); err != nil {
		return cli.Exit(1, fmt.Errorf("write report: %w", err))
	}
	if !r.Healthy() {
		return cli.Exit(1, nil)
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/cri"
)

type diagOptions struct {
	rt      runtimeFlags
	output  string
	samples int
}

func newDiagCommand() *cobra.Command {
	o := &diagOptions{}
	cmd := &cobra.Command{
		Use:   "diag",
		Short: "Check once whether the container runtime answers the CRI calls the kubelet depends on",
		Long: `diag times Version, Status, ListPodSandbox, ListContainers, PodSandboxStatus,
ContainerStatus and ImageFsInfo against the runtime and prints a verdict:
Healthy, Degraded (slow or erroring), Hung (a call did not answer within
--timeout) or Unreachable. It returns within about --timeout plus a second
per sample, even when the runtime is frozen.

Exit codes: 0 Healthy, 1 Degraded, Hung or Unreachable, 2 usage error.`,
		Example: `  hangwatch diag
  hangwatch diag -r unix:///run/containerd/containerd.sock -t 5s -o json
  hangwatch diag --samples 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.Flags().Changed("timeout"))
		},
	}
	o.rt.add(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().IntVar(&o.samples, "samples", 1, "probe cycles to run back to back")
	return cmd
}

func (o *diagOptions) validate() error {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fieldError("--output", o.output, "must be table, json or yaml")
	}
	if o.samples < 1 {
		return fieldError("--samples", o.samples, "must be at least 1")
	}
	return o.rt.validate()
}

func (o *diagOptions) run(ctx context.Context, w io.Writer, timeoutSet bool) error {
	if err := o.validate(); err != nil {
		return err
	}
	ep, err := o.rt.resolve(timeoutSet)
	if err != nil {
		return err
	}
	conn, err := cri.Dial(ep.Address)
	if err != nil {
		return err
	}
	defer conn.Close()
	cfg := o.rt.proberConfig(ep)
	p := cri.NewProber(conn.Runtime, conn.Image, cfg, clock.RealClock{}, nil)
	cycles := make([]cri.Cycle, 0, o.samples)
	for i := 0; i < o.samples; i++ {
		cycles = append(cycles, p.Cycle(ctx))
	}
	report := cri.NewReport(ep, p.Config(), cycles, p.InFlight())
	if err := writeReport(w, o.output, report); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("write report: %w", err)}
	}
	if report.Verdict != cri.VerdictHealthy {
		return &exitError{code: 1}
	}
	return nil
}

func writeReport(w io.Writer, format string, r cri.Report) error {
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
	return cri.WriteTable(w, r)
}

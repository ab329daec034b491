package diag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/leases"
)

// checkLease reads the Lease once when there are credentials; nil without.
// It does not change diag's verdict.
func checkLease(ctx context.Context, api config.APIServer, node string, nodeErr error, clk clock.WithTicker) *leases.Report {
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
	return leases.Check(ctx, client, node, api.NodeMonitorGracePeriod.Duration, clk)
}

// writeLeaseTable writes the report as diag's NODE LEASE line.
func writeLeaseTable(w io.Writer, r *leases.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case r.Error != "":
		fmt.Fprintf(tw, "\nNODE LEASE\tnot read: %s\n", r.Error)
	case !r.Found:
		fmt.Fprintf(tw, "\nNODE LEASE\t%s/%s does not exist: nothing renews it\n", leases.Namespace, r.Node)
	default:
		fmt.Fprintf(tw, "\nNODE LEASE\t%s/%s renewed %.1fs ago (due every %gs, %d missed); %.1fs of the %gs grace left before the node is marked Unknown\n",
			leases.Namespace, r.Node, r.RenewAgeSeconds, r.RenewIntervalSeconds, r.MissedRenewals, r.SecondsLeft, r.GraceSeconds)
	}
	return tw.Flush()
}

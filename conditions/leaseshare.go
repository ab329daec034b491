package conditions

import (
	"fmt"
	"strconv"
)

// ReasonNodeLeaseNotRenewed is the KubeletUnresponsive problem of a Lease
// the kubelet stopped renewing.
const ReasonNodeLeaseNotRenewed = "NodeLeaseNotRenewed"

// WithLeaseShare has KubeletUnresponsive's NodeLeaseNotRenewed problem
// raised once the Lease has gone unrenewed for share of the grace period
// (--lease-grace-share), in place of the built-in missed-renewals rule.
// The other problems stay as they are, in their order.
func WithLeaseShare(specs []Spec, share float64) []Spec {
	out := make([]Spec, len(specs))
	copy(out, specs)
	for i := range out {
		if out[i].Type != TypeKubeletUnresponsive {
			continue
		}
		problems := []Problem{}
		for _, p := range out[i].Problems {
			if p.Reason != ReasonNodeLeaseNotRenewed {
				problems = append(problems, p)
			}
		}
		out[i].Problems = append(problems, leaseShareProblem(share))
	}
	return out
}

func leaseShareProblem(share float64) Problem {
	pct := strconv.FormatFloat(share*100, 'f', -1, 64)
	return Problem{
		When: fmt.Sprintf("lease.renewAgeSeconds >= %s * lease.graceSeconds", strconv.FormatFloat(share, 'f', -1, 64)),
		Outcome: Outcome{Reason: ReasonNodeLeaseNotRenewed, MessageExpression: `"the kubelet has not renewed its node Lease for ` + pct +
			`% of the grace period; the node lifecycle controller marks the node Unknown " + string(lease.graceSeconds) + "s after the last renewal"`},
	}
}

package conditions

// Reasons of the built-in rules that other code or tests name.
const (
	// ReasonNodeLeaseNotRenewed is the KubeletUnresponsive problem of a
	// Lease the kubelet stopped renewing.
	ReasonNodeLeaseNotRenewed = "NodeLeaseNotRenewed"
	// ReasonRelistSlow is the PLEGUnhealthy problem of a relist that is
	// slow but completes.
	ReasonRelistSlow = "RelistSlow"
)

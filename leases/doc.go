// Package leases watches the node's Lease in kube-node-lease and tells how
// long is left before the node lifecycle controller would mark the node
// Unknown. The controller only looks at when renewTime last changed, on its
// own clock, so hangwatch measures the same thing on a monotonic clock.
package leases

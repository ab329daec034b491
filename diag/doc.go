// Package diag is `hangwatch diag` wired together: the third assembly
// beside agent (the daemon) and remedy/manager. It checks the node once,
// with the packages the daemon judges with, so diag and run say the same
// of the same signals: the CRI prober's cycles (cri), one emulated PLEG
// relist and the kubelet's metrics (pleg, kubeletmetrics), the kernel
// log's lookback window (kernellog), the node Lease (leases) and whether
// repair could restart the runtime and the kubelet here (repair).
//
// Those packages return data; diag owns the report they make up, its
// verdict, and its rendering as a table, JSON or YAML. Only the command
// imports it.
package diag

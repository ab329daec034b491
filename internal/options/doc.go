// Package options translates the configuration into each package's own
// options: the CRI endpoint and prober, the kubelet scraper, the PLEG
// monitor, the condition rules, the kernel rules files and repair. The
// assemblies (agent, diag and the command's repair and config checks)
// share it, so `run`, `diag` and `config check` read a setting alike; the
// packages it feeds never see the configuration, and config never sees
// their options.
package options

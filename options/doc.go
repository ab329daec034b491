// Package options builds each package's options from the configuration's
// types, for the assemblies (agent, diag, the command's repair and config
// checks). It covers the CRI endpoint and prober, the kubelet scraper, the
// PLEG monitor, the condition rules, the kernel rules files and repair, so
// `run`, `diag` and `config check` read a setting alike; the packages it
// feeds never see the configuration, and config never sees their options.
package options

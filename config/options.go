package config

import (
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// Options are the kubelet scraper's options.
func (k Kubelet) Options() kubeletmetrics.Options {
	return kubeletmetrics.Options{URL: k.MetricsURL, TokenFile: k.TokenFile, Kubeconfig: k.Kubeconfig,
		CAFile: k.CAFile, ServerName: k.TLSServerName, InsecureSkipVerify: k.InsecureSkipTLSVerify,
		Timeout: k.MetricsTimeout.Duration}
}

// Config is the PLEG monitor's configuration. SlowFor is not the
// monitor's: it tunes the PLEGUnhealthy rule (Specs).
func (g PLEG) Config() pleg.Config {
	c := pleg.DefaultConfig()
	c.StaleAfter, c.EmulationStallAfter = g.StaleAfter.Duration, g.EmulationStallAfter.Duration
	c.SlowRelist = g.SlowRelist.Duration
	return c
}

// EndpointOptions choose the CRI endpoint from these settings.
func (r Runtime) EndpointOptions() cri.EndpointOptions {
	return cri.EndpointOptions{Flag: r.Endpoint, Timeout: r.TimeoutOr(cri.DefaultTimeout), TimeoutSet: r.Timeout != nil,
		CrictlConfig: r.CrictlConfig, KubeletConfig: r.KubeletConfig}
}

// ProberConfig is the CRI prober's configuration for the endpoint chosen.
func (r Runtime) ProberConfig(ep cri.Endpoint) cri.Config {
	return cri.Config{Timeout: ep.Timeout, CallLifetime: ep.Timeout, SlowThreshold: r.SlowThreshold.Duration,
		SampleSize: r.SampleSize, Concurrency: r.Concurrency}
}

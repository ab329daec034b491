package options

import (
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/cri"
	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// Endpoint chooses the CRI endpoint from the runtime settings.
func Endpoint(r config.Runtime) cri.EndpointOptions {
	return cri.EndpointOptions{Flag: r.Endpoint, Timeout: r.TimeoutOr(cri.DefaultTimeout), TimeoutSet: r.Timeout != nil,
		CrictlConfig: r.CrictlConfig, KubeletConfig: r.KubeletConfig}
}

// Prober is the CRI prober's configuration for the endpoint chosen.
func Prober(r config.Runtime, ep cri.Endpoint) cri.Config {
	return cri.Config{Timeout: ep.Timeout, CallLifetime: ep.Timeout, SlowThreshold: r.SlowThreshold.Duration,
		SampleSize: r.SampleSize, Concurrency: r.Concurrency}
}

// Kubelet are the kubelet scraper's options.
func Kubelet(k config.Kubelet) kubeletmetrics.Options {
	return kubeletmetrics.Options{URL: k.MetricsURL, TokenFile: k.TokenFile, Kubeconfig: k.Kubeconfig,
		CAFile: k.CAFile, ServerName: k.TLSServerName, InsecureSkipVerify: k.InsecureSkipTLSVerify,
		Timeout: k.MetricsTimeout.Duration}
}

// PLEG is the PLEG monitor's configuration. SlowFor is not the monitor's:
// it tunes the PLEGUnhealthy rule (config's RuleParams).
func PLEG(g config.PLEG) pleg.Config {
	c := pleg.DefaultConfig()
	c.StaleAfter, c.EmulationStallAfter = g.StaleAfter.Duration, g.EmulationStallAfter.Duration
	c.SlowRelist = g.SlowRelist.Duration
	return c
}

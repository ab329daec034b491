package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/hangwatch/hangwatch/cri"
)

// runtimeFlags choose the runtime endpoint and bound the probe, the same way
// for diag and run.
type runtimeFlags struct {
	endpoint      string
	timeout       time.Duration
	crictlConfig  string
	kubeletConfig string
	slow          time.Duration
	sampleSize    int
	concurrency   int
}

func (f *runtimeFlags) add(fs *pflag.FlagSet) {
	d := cri.DefaultConfig()
	fs.StringVarP(&f.endpoint, "runtime-endpoint", "r", "", "CRI endpoint (unix:///path); default: $CONTAINER_RUNTIME_ENDPOINT, crictl's config, the kubelet's config, then the containerd, CRI-O and cri-dockerd sockets")
	fs.DurationVarP(&f.timeout, "timeout", "t", cri.DefaultTimeout, "how long to wait for each CRI call before reporting it hung; when not given, the timeout in crictl's config applies if set")
	fs.StringVar(&f.crictlConfig, "crictl-config", "", "crictl config file (default $CRI_CONFIG_FILE or "+cri.DefaultCrictlConfig+")")
	fs.StringVar(&f.kubeletConfig, "kubelet-config", cri.DefaultKubeletConfig, "kubelet config file whose containerRuntimeEndpoint is used when readable")
	fs.DurationVar(&f.slow, "slow-threshold", d.SlowThreshold, "an answered call slower than this is slow")
	fs.IntVar(&f.sampleSize, "sample-size", d.SampleSize, "most sandboxes, and most containers, whose status one cycle reads")
	fs.IntVar(&f.concurrency, "concurrency", d.Concurrency, "most per-object status calls out at once")
}

func (f *runtimeFlags) validate() error {
	var p problems
	p.check(f.slow <= 0, "--slow-threshold", f.slow, "must be positive")
	p.check(f.sampleSize < 0, "--sample-size", f.sampleSize, "must not be negative")
	p.check(f.concurrency < 1, "--concurrency", f.concurrency, "must be at least 1")
	return p.err()
}

// resolve picks the endpoint; timeoutSet tells whether --timeout was given.
func (f *runtimeFlags) resolve(timeoutSet bool) (cri.Endpoint, error) {
	return cri.ResolveEndpoint(cri.EndpointOptions{
		Flag: f.endpoint, Timeout: f.timeout, TimeoutSet: timeoutSet,
		CrictlConfig: f.crictlConfig, KubeletConfig: f.kubeletConfig,
	})
}

func (f *runtimeFlags) proberConfig(ep cri.Endpoint) cri.Config {
	return cri.Config{Timeout: ep.Timeout, CallLifetime: ep.Timeout, SlowThreshold: f.slow,
		SampleSize: f.sampleSize, Concurrency: f.concurrency}
}

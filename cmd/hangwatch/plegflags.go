package main

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/kubeletmetrics"
	"github.com/hangwatch/hangwatch/pleg"
)

// kubeletMetricsFlags say where the kubelet's /metrics is and how to get in.
type kubeletMetricsFlags struct {
	opts kubeletmetrics.Options
}

func (f *kubeletMetricsFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.opts.URL, "kubelet-metrics-url", "", "the kubelet's metrics URL, e.g. https://127.0.0.1:10250/metrics (or the read-only port's http://127.0.0.1:10255/metrics); empty: no kubelet metrics, PLEG health from the relist emulation only")
	fs.StringVar(&f.opts.TokenFile, "kubelet-token-file", "", "bearer token file for the kubelet (re-read as it rotates); the identity needs get on nodes/metrics")
	fs.StringVar(&f.opts.Kubeconfig, "kubelet-kubeconfig", "", "kubeconfig whose client certificate (or token) authenticates to the kubelet; its server and CA are not used")
	fs.StringVar(&f.opts.CAFile, "kubelet-ca-file", "", "CA bundle that signed the kubelet's serving certificate")
	fs.StringVar(&f.opts.ServerName, "kubelet-tls-server-name", "", "name to verify the kubelet's serving certificate against; default: the URL's host, or this node's name (--node-name) for a loopback URL with --kubelet-ca-file, as the kubelet's self-signed certificate names its node")
	fs.BoolVar(&f.opts.InsecureSkipVerify, "kubelet-insecure-skip-tls-verify", false, "do not verify the kubelet's serving certificate (logged as a warning); allowed only for a loopback URL. Prefer --kubelet-ca-file")
	fs.DurationVar(&f.opts.Timeout, "kubelet-metrics-timeout", kubeletmetrics.DefaultTimeout, "deadline of one scrape; a kubelet blocked on a frozen runtime does not answer, and that is reported")
}

// validate checks the kubelet options when a URL is given.
func (f *kubeletMetricsFlags) validate() error {
	if f.opts.URL == "" {
		return nil
	}
	if f.opts.Timeout <= 0 {
		return fieldError("--kubelet-metrics-timeout", f.opts.Timeout, "must be positive")
	}
	return f.opts.Validate()
}

// scraper returns nil without a URL. A CA for a loopback URL is checked
// against the node's name, which the kubelet's serving certificate names.
func (f *kubeletMetricsFlags) scraper(node string) (*kubeletmetrics.Scraper, error) {
	if f.opts.URL == "" {
		return nil, nil
	}
	opts := f.opts.ForNode(node)
	if opts.SkipsVerification() {
		klog.InfoS("Warning: the kubelet's serving certificate is not verified (--kubelet-insecure-skip-tls-verify); give --kubelet-ca-file instead", "url", opts.URL)
	}
	return kubeletmetrics.NewScraper(opts)
}

// plegFlags tune the PLEG checks of `run`.
type plegFlags struct {
	kubelet         kubeletMetricsFlags
	cfg             pleg.Config
	scrapePeriod    time.Duration
	window          time.Duration
	emulationPeriod time.Duration
}

func (f *plegFlags) add(fs *pflag.FlagSet) {
	f.kubelet.add(fs)
	d := pleg.DefaultConfig()
	fs.DurationVar(&f.scrapePeriod, "kubelet-metrics-period", 10*time.Second, "time between scrapes of the kubelet's metrics")
	fs.DurationVar(&f.window, "pleg-window", 5*time.Minute, "span the kubelet's relist p99 is taken over")
	fs.DurationVar(&f.cfg.StaleAfter, "pleg-stale-after", d.StaleAfter, "PLEGUnhealthy (RelistStalled) when kubelet_pleg_last_seen_seconds is older; the kubelet's own threshold is 3m")
	fs.DurationVar(&f.cfg.EmulationStallAfter, "pleg-emulation-stall-after", d.EmulationStallAfter, "PLEGUnhealthy (RelistStalled) when hangwatch's own relist waits on one CRI call this long")
	fs.DurationVar(&f.cfg.SlowRelist, "pleg-slow-relist", d.SlowRelist, "PLEGUnhealthy (RelistSlow) when the relist p99, or two emulated relists in a row, take this long")
	fs.DurationVar(&f.cfg.SlowFor, "pleg-slow-for", d.SlowFor, "how long RelistSlow must last before PLEGUnhealthy rises (a burst of pods starting slows relists for a while on a healthy node)")
	f.cfg.SlowRelistsInARow = d.SlowRelistsInARow
	fs.DurationVar(&f.emulationPeriod, "pleg-emulation-period", 5*time.Second, "time between emulated relists while the kubelet's gauge cannot tell (0 turns the emulation off)")
}

func (f *plegFlags) validate() error {
	var p problems
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"--kubelet-metrics-period", f.scrapePeriod}, {"--pleg-window", f.window}, {"--pleg-stale-after", f.cfg.StaleAfter},
		{"--pleg-emulation-stall-after", f.cfg.EmulationStallAfter}, {"--pleg-slow-relist", f.cfg.SlowRelist}} {
		p.check(d.d <= 0, d.name, d.d, "must be positive")
	}
	p.check(f.emulationPeriod < 0, "--pleg-emulation-period", f.emulationPeriod, "must not be negative")
	p.check(f.cfg.SlowFor < 0, "--pleg-slow-for", f.cfg.SlowFor, "must not be negative")
	p.add(f.kubelet.validate())
	return p.err()
}

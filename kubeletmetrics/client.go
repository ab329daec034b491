package kubeletmetrics

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// Options say where the kubelet's metrics are and how to authenticate.
type Options struct {
	// URL is the kubelet's metrics URL: https://127.0.0.1:10250/metrics,
	// or the read-only port's http://127.0.0.1:10255/metrics where enabled.
	URL string
	// TokenFile is a bearer token file, re-read as it rotates (a projected
	// ServiceAccount token in the DaemonSet).
	TokenFile string
	// Kubeconfig supplies a client certificate and key (or a token) for the
	// kubelet; its server and CA are not used.
	Kubeconfig string
	// CAFile verifies the kubelet's serving certificate.
	CAFile string
	// ServerName is the name to verify the serving certificate against
	// when it differs from the URL's host.
	ServerName string
	// InsecureSkipVerify skips verifying the serving certificate; allowed
	// only for a loopback address.
	InsecureSkipVerify bool
	// Timeout bounds every request; zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is a scrape's deadline unless told otherwise: a healthy
// kubelet answers in milliseconds, and one blocked on a frozen runtime
// does not answer at all.
const DefaultTimeout = 5 * time.Second

// Validate checks the options, naming the flag at fault.
func (o Options) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("--kubelet-metrics-url %q: want an http:// or https:// URL with a host", o.URL)
	}
	if u.Scheme == "http" && (o.TokenFile != "" || o.Kubeconfig != "") {
		return fmt.Errorf("--kubelet-metrics-url %q: credentials are sent only over https", o.URL)
	}
	if o.InsecureSkipVerify && !isLoopback(u.Hostname()) {
		return fmt.Errorf("--kubelet-insecure-skip-tls-verify: allowed only for a loopback address, not %q", u.Hostname())
	}
	if o.InsecureSkipVerify && o.CAFile != "" {
		return fmt.Errorf("--kubelet-insecure-skip-tls-verify and --kubelet-ca-file %q: give one", o.CAFile)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--kubelet-metrics-timeout %v: must not be negative", o.Timeout)
	}
	return nil
}

// ForNode returns o with the node's name as the server name to verify,
// when a CA is given for a loopback URL and no name is: the kubelet's
// self-signed serving certificate names the node (its hostname), never
// 127.0.0.1.
func (o Options) ForNode(node string) Options {
	u, err := url.Parse(o.URL)
	if err == nil && u.Scheme == "https" && o.CAFile != "" && o.ServerName == "" && isLoopback(u.Hostname()) {
		o.ServerName = node
	}
	return o
}

// SkipsVerification tells whether the kubelet's serving certificate goes
// unverified, which the caller should warn about.
func (o Options) SkipsVerification() bool {
	u, err := url.Parse(o.URL)
	return err == nil && u.Scheme == "https" && o.InsecureSkipVerify
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// roundTripper builds the HTTP transport with the credentials. client-go's
// transport re-reads a token file as it rotates and a certificate pair
// named by file as it is renewed.
func (o Options) roundTripper() (http.RoundTripper, error) {
	cfg := &transport.Config{
		BearerTokenFile: o.TokenFile,
		TLS:             transport.TLSConfig{CAFile: o.CAFile, ServerName: o.ServerName, Insecure: o.InsecureSkipVerify},
	}
	if o.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubelet-kubeconfig %s: %w", o.Kubeconfig, err)
		}
		tls := rc.TLSClientConfig
		cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.CertData, cfg.TLS.KeyData = tls.CertFile, tls.KeyFile, tls.CertData, tls.KeyData
		if cfg.BearerTokenFile == "" {
			cfg.BearerToken, cfg.BearerTokenFile = rc.BearerToken, rc.BearerTokenFile
		}
	}
	rt, err := transport.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet metrics client: %w", err)
	}
	return rt, nil
}

// ScraperFor returns nil without a URL. A CA for a loopback URL is checked
// against the node's name, which the kubelet's serving certificate names;
// a certificate left unverified is logged as a warning.
func ScraperFor(o Options, node string) (*Scraper, error) {
	if o.URL == "" {
		return nil, nil
	}
	o = o.ForNode(node)
	if o.SkipsVerification() {
		klog.InfoS("Warning: the kubelet's serving certificate is not verified (--kubelet-insecure-skip-tls-verify); give --kubelet-ca-file instead", "url", o.URL)
	}
	return NewScraper(o)
}

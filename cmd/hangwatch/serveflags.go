package main

import (
	"net"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// serveFlags say where hangwatch serves and how the secure port checks
// who asks.
type serveFlags struct {
	listen        string
	secureListen  string
	certFile      string
	keyFile       string
	authzResource string
	authCacheTTL  time.Duration
}

func (f *serveFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen-address", "127.0.0.1:9764", "plain HTTP, not authenticated: /healthz, and with no --secure-listen-address also /metrics, /conditions and /events (kernel lines withheld); keep it on loopback")
	fs.StringVar(&f.secureListen, "secure-listen-address", "", "HTTPS with bearer tokens checked by TokenReview and SubjectAccessReview: /metrics, /conditions, /events (with kernel lines) and /healthz; for example 0.0.0.0:9765; needs an API server")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "serving certificate of the secure port (PEM, re-read when it changes); empty with --tls-private-key-file: self-signed in memory, as the kubelet does")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	fs.StringVar(&f.authzResource, "authorization-resource", "", "what the secure port checks a caller for: empty for get on the request's path as a non-resource URL (RBAC nonResourceURLs: [\"/metrics\"]); or RESOURCE[.GROUP][/SUBRESOURCE] on this Node, such as nodes/metrics")
	fs.DurationVar(&f.authCacheTTL, "authentication-cache-ttl", 2*time.Minute, "how long a TokenReview or an allowing SubjectAccessReview answer is kept (a denial at most 30s)")
}

func (f *serveFlags) validate() error {
	var p problems
	_, _, err := net.SplitHostPort(f.listen)
	p.check(err != nil, "--listen-address", f.listen, "want HOST:PORT")
	if f.secureListen != "" {
		_, _, err := net.SplitHostPort(f.secureListen)
		p.check(err != nil, "--secure-listen-address", f.secureListen, "want HOST:PORT")
	}
	p.check((f.certFile == "") != (f.keyFile == ""), "--tls-cert-file", f.certFile, "give it with --tls-private-key-file, or neither")
	p.check(f.secureListen == "" && f.certFile != "", "--tls-cert-file", f.certFile, "needs --secure-listen-address")
	p.check(f.authCacheTTL < 0 || f.authCacheTTL > time.Hour, "--authentication-cache-ttl", f.authCacheTTL, "must be from 0 to 1h")
	return p.err()
}

// warnIfExposed logs when the unauthenticated port is reachable from
// other hosts.
func (f *serveFlags) warnIfExposed() {
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return
	}
	klog.InfoS("Warning: --listen-address is not loopback; nothing on it is authenticated (use --secure-listen-address for remote scrapes)", "listen", f.listen)
}

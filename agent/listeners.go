package agent

import (
	"net"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/httpauth"
)

// openServers listens on --listen-address and --secure-listen-address.
func (a *Agent) openServers() (*httpauth.Ports, error) {
	e := endpoints{reg: a.o.Registry, conds: a.view, events: a.events, health: a.health}
	var secureMux http.Handler
	if a.secure != nil {
		secureMux = e.secureMux()
	}
	ports, err := httpauth.OpenPorts(a.cfg.Server.ListenAddress, e.plainMux(a.cfg.Server.SecureListenAddress), a.secure, secureMux)
	if err != nil {
		return nil, serveError("%w", err)
	}
	return ports, nil
}

// newSecurePort builds the secure port (its guard and TLS configuration;
// Listen opens it); nil without --secure-listen-address.
func newSecurePort(o Options, f config.Server) (*httpauth.SecureServer, error) {
	if f.SecureListenAddress == "" {
		return nil, nil
	}
	return httpauth.NewPort(httpauth.PortOptions{Address: f.SecureListenAddress, API: o.API,
		Resource: f.AuthorizationResource, Name: o.Node, CertFile: f.TLSCertFile, KeyFile: f.TLSPrivateKeyFile,
		Names: []string{o.Node}, CacheTTL: f.AuthenticationCacheTTL.Duration, Clock: o.Clock,
		Registry: o.Registry, RequestsMetric: "hangwatch_secure_requests_total"})
}

// warnIfExposed logs when the unauthenticated port is reachable from
// other hosts.
func warnIfExposed(listen string) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return
	}
	klog.InfoS("Warning: --listen-address is not loopback; nothing on it is authenticated (use --secure-listen-address for remote scrapes)", "listen", listen)
}

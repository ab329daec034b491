package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/httpauth"
)

// httpServers are the plain server and, when configured, the secure one.
type httpServers struct {
	servers   []*http.Server
	listeners []net.Listener
	tls       []bool
}

// openServers listens on --listen-address and --secure-listen-address.
func (a *Agent) openServers() (*httpServers, error) {
	e := endpoints{reg: a.o.Registry, conds: a.conds, events: a.events, health: a.health}
	srv := a.cfg.Server
	s := &httpServers{}
	if err := s.open("--listen-address", srv.ListenAddress, e.plainMux(srv.SecureListenAddress), nil); err != nil {
		return nil, err
	}
	if a.secure == nil {
		return s, nil
	}
	if err := s.open("--secure-listen-address", srv.SecureListenAddress, a.secure.guard.Wrap(e.secureMux()), a.secure.tls); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *httpServers) open(flag, addr string, h http.Handler, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return serveError("%s %s: %w", flag, addr, err)
	}
	srv, ln := newServer(ln, h)
	srv.TLSConfig = tlsCfg
	s.servers, s.listeners, s.tls = append(s.servers, srv), append(s.listeners, ln), append(s.tls, tlsCfg != nil)
	return nil
}

// securePort is what the secure port checks callers with and serves under.
type securePort struct {
	guard *httpauth.Guard
	tls   *tls.Config
}

// newSecurePort builds the secure port's guard and TLS configuration; nil
// without --secure-listen-address.
func newSecurePort(o Options, f config.Server) (*securePort, error) {
	if f.SecureListenAddress == "" {
		return nil, nil
	}
	if o.API == nil {
		return nil, fmt.Errorf("--secure-listen-address %s: needs an API server (--kubeconfig, or in a pod) to review tokens", f.SecureListenAddress)
	}
	attrs, err := httpauth.ParseResource(f.AuthorizationResource, o.Node)
	if err != nil {
		return nil, err
	}
	reviewer, err := httpauth.NewAPIReviewer(o.API)
	if err != nil {
		return nil, err
	}
	hosts := []string{o.Node, "localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(f.SecureListenAddress); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	tlsCfg, err := httpauth.ServingConfig(f.TLSCertFile, f.TLSPrivateKeyFile, hosts, o.Clock)
	if err != nil {
		return nil, err
	}
	requests := metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_secure_requests_total", StabilityLevel: metrics.ALPHA,
		Help: "Requests to the secure port by result: allowed, unauthenticated, forbidden or review_error."}, []string{"result"})
	o.Registry.MustRegister(requests)
	guard := httpauth.NewGuard(httpauth.Options{Reviewer: reviewer, Attributes: attrs, Clock: o.Clock, CacheTTL: f.AuthenticationCacheTTL.Duration,
		Count: func(r string) { requests.WithLabelValues(r).Inc() }})
	return &securePort{guard: guard, tls: tlsCfg}, nil
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

// serve serves every server; the first to fail reports on errs.
func (s *httpServers) serve(errs chan<- error) {
	for i, srv := range s.servers {
		go func() {
			var err error
			if s.tls[i] {
				err = srv.ServeTLS(s.listeners[i], "", "")
			} else {
				err = srv.Serve(s.listeners[i])
			}
			errs <- fmt.Errorf("serve %s: %w", s.listeners[i].Addr(), err)
		}()
	}
}

func (s *httpServers) addrs() []string {
	var out []string
	for _, ln := range s.listeners {
		out = append(out, ln.Addr().String())
	}
	return out
}

func (s *httpServers) close() {
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
}

func (s *httpServers) shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("shut down server: %w", err))
		}
	}
	return errors.Join(errs...)
}

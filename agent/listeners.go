package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/httpauth"
)

// httpServers are the plain server and, when configured, the secure one.
type httpServers struct {
	plain    *http.Server
	listener net.Listener
	secure   *httpauth.SecureServer // nil without --secure-listen-address
}

// openServers listens on --listen-address and --secure-listen-address.
func (a *Agent) openServers() (*httpServers, error) {
	e := endpoints{reg: a.o.Registry, conds: a.conds, events: a.events, health: a.health}
	srv := a.cfg.Server
	ln, err := net.Listen("tcp", srv.ListenAddress)
	if err != nil {
		return nil, serveError("--listen-address %s: %w", srv.ListenAddress, err)
	}
	s := &httpServers{}
	s.plain, s.listener = newServer(ln, e.plainMux(srv.SecureListenAddress))
	if a.secure == nil {
		return s, nil
	}
	if err := a.secure.Listen(e.secureMux()); err != nil {
		s.close()
		return nil, serveError("%w", err)
	}
	s.secure = a.secure
	return s, nil
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

// serve serves every server; the first to fail reports on errs.
func (s *httpServers) serve(errs chan<- error) {
	report := func(addr string, serve func() error) {
		errs <- fmt.Errorf("serve %s: %w", addr, serve())
	}
	go report(s.listener.Addr().String(), func() error { return s.plain.Serve(s.listener) })
	if s.secure != nil {
		go report(s.secure.Addr(), s.secure.Serve)
	}
}

func (s *httpServers) addrs() []string {
	out := []string{s.listener.Addr().String()}
	if s.secure != nil {
		out = append(out, s.secure.Addr())
	}
	return out
}

func (s *httpServers) close() {
	_ = s.listener.Close()
	if s.secure != nil {
		_ = s.secure.Close()
	}
}

func (s *httpServers) shutdown(ctx context.Context) error {
	var errs []error
	if err := s.plain.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("shut down server: %w", err))
	}
	if s.secure != nil {
		if err := s.secure.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

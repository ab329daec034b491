package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/httpauth"
)

// httpServers are the plain server and, when configured, the secure one.
type httpServers struct {
	servers   []*http.Server
	listeners []net.Listener
	tls       []bool
}

// openServers listens on --listen-address and --secure-listen-address.
func (d *daemon) openServers() (*httpServers, error) {
	e := endpoints{reg: d.reg, conds: d.conds, events: d.events, health: d.health}
	s := &httpServers{}
	if err := s.open("--listen-address", d.o.serve.listen, e.plainMux(d.o.serve.secureListen), nil); err != nil {
		return nil, err
	}
	if d.o.serve.secureListen == "" {
		return s, nil
	}
	guard, tlsCfg, err := d.secureParts()
	if err != nil {
		s.close()
		return nil, err
	}
	if err := s.open("--secure-listen-address", d.o.serve.secureListen, guard.Wrap(e.secureMux()), tlsCfg); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *httpServers) open(flag, addr string, h http.Handler, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s %s: %w", flag, addr, err)}
	}
	srv, ln := newServer(ln, h)
	srv.TLSConfig = tlsCfg
	s.servers, s.listeners, s.tls = append(s.servers, srv), append(s.listeners, ln), append(s.tls, tlsCfg != nil)
	return nil
}

// secureParts builds the secure port's guard and TLS configuration.
func (d *daemon) secureParts() (*httpauth.Guard, *tls.Config, error) {
	f := d.o.serve
	cfg, err := d.o.api.restConfig()
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		return nil, nil, fieldError("--secure-listen-address", f.secureListen, "needs an API server (--kubeconfig, or in a pod) to review tokens")
	}
	node, err := d.o.api.node()
	if err != nil {
		return nil, nil, err
	}
	attrs, err := httpauth.ParseResource(f.authzResource, node)
	if err != nil {
		return nil, nil, err
	}
	reviewer, err := httpauth.NewAPIReviewer(cfg)
	if err != nil {
		return nil, nil, err
	}
	hosts := []string{node, "localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(f.secureListen); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	tlsCfg, err := httpauth.ServingConfig(f.certFile, f.keyFile, hosts, d.clk)
	if err != nil {
		return nil, nil, err
	}
	requests := metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_secure_requests_total", StabilityLevel: metrics.ALPHA,
		Help: "Requests to the secure port by result: allowed, unauthenticated, forbidden or review_error."}, []string{"result"})
	d.reg.MustRegister(requests)
	return httpauth.NewGuard(httpauth.Options{Reviewer: reviewer, Attributes: attrs, Clock: d.clk, CacheTTL: f.authCacheTTL,
		Count: func(r string) { requests.WithLabelValues(r).Inc() }}), tlsCfg, nil
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

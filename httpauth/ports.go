package httpauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// The plain port's limits: every endpoint answers from memory in
// milliseconds, so a client that sends or reads slowly, or holds many
// connections, is cut off instead of holding the binary's goroutines and
// file descriptors.
const (
	plainConnections = 32
	plainHeaderBytes = 8 << 10
	plainReadHeader  = 5 * time.Second
	plainRead        = 10 * time.Second
	plainWrite       = 30 * time.Second
	plainIdle        = 60 * time.Second
)

// Ports are a binary's plain port (not authenticated: /healthz, and what
// it serves without a secure port) and, when it has one, its secure port.
type Ports struct {
	plain    *http.Server
	listener net.Listener
	secure   *SecureServer // nil without --secure-listen-address
}

// OpenPorts listens on address, serving plain within the plain port's
// limits, and, when secure is not nil, opens it serving secureHandler.
func OpenPorts(address string, plain http.Handler, secure *SecureServer, secureHandler http.Handler) (*Ports, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("--listen-address %s: %w", address, err)
	}
	p := &Ports{listener: netutil.LimitListener(ln, plainConnections),
		plain: &http.Server{Handler: plain, ReadHeaderTimeout: plainReadHeader, ReadTimeout: plainRead,
			WriteTimeout: plainWrite, IdleTimeout: plainIdle, MaxHeaderBytes: plainHeaderBytes}}
	if secure == nil {
		return p, nil
	}
	if err := secure.Listen(secureHandler); err != nil {
		p.Close()
		return nil, err
	}
	p.secure = secure
	return p, nil
}

// Start serves every port, then tells onReady, when set, the addresses
// served. The first port to fail reports on the channel returned.
func (p *Ports) Start(onReady func(addrs []string)) <-chan error {
	errs := make(chan error, 2)
	report := func(addr string, serve func() error) {
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("serve %s: %w", addr, err)
		}
	}
	go report(p.listener.Addr().String(), func() error { return p.plain.Serve(p.listener) })
	if p.secure != nil {
		go report(p.secure.Addr(), p.secure.Serve)
	}
	if onReady != nil {
		onReady(p.Addrs())
	}
	return errs
}

// Addrs are the addresses served: the plain port's, then the secure one's.
func (p *Ports) Addrs() []string {
	out := []string{p.listener.Addr().String()}
	if p.secure != nil {
		out = append(out, p.secure.Addr())
	}
	return out
}

// Close closes the ports and every connection at once.
func (p *Ports) Close() {
	_ = p.listener.Close()
	_ = p.plain.Close()
	if p.secure != nil {
		_ = p.secure.Close()
	}
}

// Shutdown stops accepting and waits for the requests in flight, within ctx.
func (p *Ports) Shutdown(ctx context.Context) error {
	var errs []error
	if err := p.plain.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shut down %s: %w", p.listener.Addr(), err))
	}
	if p.secure != nil {
		errs = append(errs, p.secure.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

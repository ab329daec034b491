package httpauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// limits are the secure port's connection limits. Every answer comes
// from memory in milliseconds, and only a caller let through keeps its
// connection (a refusal closes it), so a connection slow or silent
// before its first request is cut off soon, and no source holds more
// than a small share of the slots.
type limits struct {
	// perSource is one source's share: Prometheus keeps one connection
	// per target, a browser six.
	perSource int
	// total takes 32 sources at their share to fill, each reconnecting
	// within seconds: one pod, one address, cannot.
	total int
	// readHeader bounds the TLS handshake, then the first request's
	// headers: a silent connection goes within twice it.
	readHeader, read, write time.Duration
	// idle closes a kept-alive connection without a request: longer
	// than the shipped PodMonitors' intervals (15 s, 30 s), so
	// Prometheus keeps its connection between scrapes.
	idle        time.Duration
	headerBytes int
}

var defaultLimits = limits{perSource: 8, total: 256, readHeader: 5 * time.Second, read: 10 * time.Second,
	write: 30 * time.Second, idle: 45 * time.Second, headerBytes: 8 << 10}

// ServerOptions configure a SecureServer.
type ServerOptions struct {
	// Address is where to listen, host:port (--secure-listen-address).
	Address    string
	Reviewer   Reviewer
	Attributes AttributesFor
	// CertFile and KeyFile are the serving certificate and key; when both
	// are empty, a self-signed certificate for Hosts is made in memory.
	CertFile, KeyFile string
	Hosts             []string
	Clock             clock.PassiveClock
	// CacheTTL is how long a yes is kept; a no is kept at most 30s.
	CacheTTL time.Duration
	// Budget bounds the reviews; the zero Budget is DefaultBudget.
	Budget Budget
	// Count, when set, is called once per request with its result.
	Count func(result string)
}

// SecureServer is the secure port: TLS, a Guard in front of the handler,
// and a listener that limits connections by source.
type SecureServer struct {
	addr   string
	limits limits
	guard  *Guard
	tls    *tls.Config
	srv    *http.Server
	ln     net.Listener
}

// NewSecureServer builds the guard and the TLS configuration of o; Listen
// opens the port.
func NewSecureServer(o ServerOptions) (*SecureServer, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	tlsCfg, err := ServingConfig(o.CertFile, o.KeyFile, o.Hosts, o.Clock)
	if err != nil {
		return nil, err
	}
	guard := NewGuard(Options{Reviewer: o.Reviewer, Attributes: o.Attributes, Clock: o.Clock, CacheTTL: o.CacheTTL,
		Budget: o.Budget, Count: o.Count})
	return &SecureServer{addr: o.Address, limits: defaultLimits, guard: guard, tls: tlsCfg}, nil
}

// Listen opens the port, serving h behind the guard once Serve runs.
func (s *SecureServer) Listen(h http.Handler) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("--secure-listen-address %s: %w", s.addr, err)
	}
	l := s.limits
	s.ln = newLimitListener(ln, l.perSource, l.total)
	s.srv = &http.Server{Handler: s.guard.Wrap(h), TLSConfig: s.tls, ReadHeaderTimeout: l.readHeader,
		ReadTimeout: l.read, WriteTimeout: l.write, IdleTimeout: l.idle, MaxHeaderBytes: l.headerBytes,
		ErrorLog: log.New(serverLog{}, "", 0)}
	return nil
}

// serverLog takes net/http's own messages (a failed handshake for each
// client that went silent or away) to klog at -v=4: a flood of
// connections must not flood the log.
type serverLog struct{}

func (serverLog) Write(p []byte) (int, error) {
	klog.V(4).InfoS("Secure port", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// Addr is the address the port listens on (after Listen).
func (s *SecureServer) Addr() string { return s.ln.Addr().String() }

// Serve serves HTTPS on the port until Shutdown or Close, then returns
// http.ErrServerClosed.
func (s *SecureServer) Serve() error { return s.srv.ServeTLS(s.ln, "", "") }

// Shutdown stops accepting and waits for requests in flight, within ctx.
func (s *SecureServer) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// Close closes the port and every connection at once; nothing before Listen.
func (s *SecureServer) Close() error {
	if s.ln == nil {
		return nil
	}
	_ = s.ln.Close() // before Serve, the server does not know it
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.ln.Addr(), err)
	}
	return nil
}

package httpauth

import (
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"
)

// PortOptions are a binary's secure port: where it listens, the API
// server that reviews its callers, what they must be allowed, and the
// counter of their requests.
type PortOptions struct {
	// Address is --secure-listen-address, host:port.
	Address string
	// API is the API server that reviews the callers' tokens; nil fails.
	API *rest.Config
	// Resource and Name are what a caller must be allowed to get
	// (ParseResource); empty Resource: get on the request's path.
	Resource, Name string
	// CertFile and KeyFile are the serving certificate and key; without
	// them, a self-signed one for Names, localhost, the loopback addresses
	// and Address's host.
	CertFile, KeyFile string
	Names             []string
	// CacheTTL is how long a yes is kept.
	CacheTTL time.Duration
	Clock    clock.PassiveClock
	// Registry gets RequestsMetric, a counter of the requests by result.
	Registry       metrics.KubeRegistry
	RequestsMetric string
}

// NewPort builds the secure port of o, reviewed by o.API: its guard, TLS
// configuration and counter; Listen opens it.
func NewPort(o PortOptions) (*SecureServer, error) {
	if o.API == nil {
		return nil, fmt.Errorf("--secure-listen-address %s: needs an API server (--kubeconfig, or in a pod) to review tokens", o.Address)
	}
	attrs, err := ParseResource(o.Resource, o.Name)
	if err != nil {
		return nil, err
	}
	reviewer, err := NewAPIReviewer(o.API)
	if err != nil {
		return nil, err
	}
	hosts := append(append([]string{}, o.Names...), "localhost", "127.0.0.1", "::1")
	if host, _, err := net.SplitHostPort(o.Address); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	requests := metrics.NewCounterVec(&metrics.CounterOpts{Name: o.RequestsMetric, StabilityLevel: metrics.ALPHA, Help: ResultsHelp},
		[]string{"result"})
	secure, err := NewSecureServer(ServerOptions{Address: o.Address, Reviewer: reviewer, Attributes: attrs,
		CertFile: o.CertFile, KeyFile: o.KeyFile, Hosts: hosts, Clock: o.Clock, CacheTTL: o.CacheTTL,
		Count: func(r string) { requests.WithLabelValues(r).Inc() }})
	if err != nil {
		return nil, err
	}
	o.Registry.MustRegister(requests)
	return secure, nil
}

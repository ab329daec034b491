package main

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/httpauth"
	"github.com/hangwatch/hangwatch/internal/cli"
)

// serveSecure serves /metrics over HTTPS (a self-signed certificate, as
// hangwatch's own secure port, and the same limits: httpauth.SecureServer)
// to callers whose bearer token a TokenReview accepts and a
// SubjectAccessReview allows get on /metrics, as the kubelet checks its
// own port. Prometheus scrapes this port; the plain one stays on loopback.
func (o *runOptions) serveSecure(reg metrics.KubeRegistry) (*httpauth.SecureServer, error) {
	cfg, err := apiclient.RESTConfig(o.kubeconfig, o.qps, o.burst)
	if err != nil || cfg == nil {
		return nil, fmt.Errorf("--secure-listen-address %s: needs an API server to review tokens: %w", o.secureListen, err)
	}
	attrs, err := httpauth.ParseResource("", "")
	if err != nil {
		return nil, err
	}
	reviewer, err := httpauth.NewAPIReviewer(cfg)
	if err != nil {
		return nil, err
	}
	requests := metrics.NewCounterVec(&metrics.CounterOpts{Name: "hangwatch_remedy_secure_requests_total", StabilityLevel: metrics.ALPHA,
		Help: httpauth.ResultsHelp}, []string{"result"})
	reg.MustRegister(requests)
	host, _ := os.Hostname()
	secure, err := httpauth.NewSecureServer(httpauth.ServerOptions{Address: o.secureListen, Reviewer: reviewer, Attributes: attrs,
		Hosts: []string{host, "localhost", "127.0.0.1"}, CacheTTL: 2 * time.Minute,
		Count: func(r string) { requests.WithLabelValues(r).Inc() }})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	if err := secure.Listen(mux); err != nil {
		return nil, cli.Exit(1, err)
	}
	go func() { _ = secure.Serve() }()
	return secure, nil
}

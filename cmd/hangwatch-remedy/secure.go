package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/apiclient"
	"github.com/hangwatch/hangwatch/httpauth"
)

// serveSecure serves /metrics over HTTPS (a self-signed certificate, as
// hangwatch's own secure port) to callers whose bearer token a TokenReview
// accepts and a SubjectAccessReview allows get on /metrics, as the kubelet
// checks its own port. Prometheus scrapes this port; the plain one stays
// on loopback.
func (o *runOptions) serveSecure(reg metrics.KubeRegistry) (*http.Server, error) {
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
	host, _ := os.Hostname()
	tlsCfg, err := httpauth.ServingConfig("", "", []string{host, "localhost", "127.0.0.1"}, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	guard := httpauth.NewGuard(httpauth.Options{Reviewer: reviewer, Attributes: attrs, Clock: clock.RealClock{}, CacheTTL: 2 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	ln, err := net.Listen("tcp", o.secureListen)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("--secure-listen-address %s: %w", o.secureListen, err)}
	}
	srv := &http.Server{Handler: guard.Wrap(mux), TLSConfig: tlsCfg, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return srv, nil
}

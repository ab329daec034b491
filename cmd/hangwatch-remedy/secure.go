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

// serveSecure serves /metrics on hangwatch's secure port (httpauth.NewPort)
// to callers whose bearer token a TokenReview accepts and a
// SubjectAccessReview allows get on /metrics, as the kubelet checks its
// own port. Prometheus scrapes this port; the plain one stays on loopback.
func (o *runOptions) serveSecure(reg metrics.KubeRegistry) (*httpauth.SecureServer, error) {
	cfg, err := apiclient.RESTConfig(o.kubeconfig, o.qps, o.burst)
	if err != nil {
		return nil, fmt.Errorf("--secure-listen-address %s: %w", o.secureListen, err)
	}
	host, _ := os.Hostname()
	secure, err := httpauth.NewPort(httpauth.PortOptions{Address: o.secureListen, API: cfg, Names: []string{host},
		CacheTTL: 2 * time.Minute, Registry: reg, RequestsMetric: "hangwatch_remedy_secure_requests_total"})
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

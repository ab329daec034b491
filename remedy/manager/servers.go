package manager

import (
	"fmt"
	"net/http"

	"k8s.io/component-base/metrics"

	"github.com/hangwatch/hangwatch/httpauth"
)

// openServers listens on the plain port (/healthz: the Node cache synced;
// /metrics too without a secure port) and the secure one (/metrics).
func (m *Manager) openServers() (*httpauth.Ports, error) {
	metricsHandler := metrics.HandlerFor(m.o.Registry, metrics.HandlerOpts{})
	plain := http.NewServeMux()
	plain.HandleFunc("/healthz", m.healthz)
	if m.secure == nil {
		plain.Handle("/metrics", metricsHandler)
		return httpauth.OpenPorts(m.o.ListenAddress, plain, nil, nil)
	}
	secure := http.NewServeMux()
	secure.Handle("/metrics", metricsHandler)
	return httpauth.OpenPorts(m.o.ListenAddress, plain, m.secure, secure)
}

func (m *Manager) healthz(w http.ResponseWriter, _ *http.Request) {
	if !m.nodes.HasSynced() {
		http.Error(w, "node cache not synced", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

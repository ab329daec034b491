package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
)

// liveness tells /healthz whether the probe loop is still cycling.
type liveness struct {
	clock   clock.PassiveClock
	maxGap  time.Duration
	mu      sync.Mutex
	started time.Time
	last    time.Time
}

func newLiveness(c clock.PassiveClock, maxGap time.Duration) *liveness {
	return &liveness{clock: c, maxGap: maxGap, started: c.Now()}
}

func (l *liveness) beat() {
	l.mu.Lock()
	l.last = l.clock.Now()
	l.mu.Unlock()
}

// check fails when no cycle has finished within maxGap.
func (l *liveness) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := l.started
	if !l.last.IsZero() {
		since = l.last
	}
	if gap := l.clock.Since(since); gap > l.maxGap {
		return fmt.Errorf("no probe cycle finished for %v (limit %v)", gap.Round(time.Second), l.maxGap)
	}
	return nil
}

// Server limits: every endpoint answers from memory in milliseconds, so a
// client that sends or reads slowly, or holds many connections, is cut off
// instead of holding the daemon's goroutines and file descriptors.
const (
	maxConnections    = 32
	maxHeaderBytes    = 8 << 10
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
)

// newServer returns the HTTP server with its limits, listening on ln
// capped at maxConnections at once.
func newServer(ln net.Listener, h http.Handler) (*http.Server, net.Listener) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	return srv, netutil.LimitListener(ln, maxConnections)
}

func newMux(reg metrics.KubeRegistry, conds *conditions.Set, events *eventLog, health *liveness) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := health.check(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/conditions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"conditions": conds.Snapshot()})
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"events": events.snapshot()})
	})
	return mux
}

package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

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
	checks  []func() error // other watchers' (the kernel log's), see addCheck
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
	for _, check := range l.checks {
		if err := check(); err != nil {
			return err
		}
	}
	since := l.started
	if !l.last.IsZero() {
		since = l.last
	}
	if gap := l.clock.Since(since); gap > l.maxGap {
		return fmt.Errorf("no probe cycle finished for %v (limit %v)", gap.Round(time.Second), l.maxGap)
	}
	return nil
}

// endpoints are what hangwatch serves over HTTP.
type endpoints struct {
	reg    metrics.KubeRegistry
	conds  *conditions.Latest // a subscriber of the engine
	events *kernelEventLog
	health *liveness
}

// withheld replaces a kernel line on the unauthenticated port: it names
// processes, PIDs and addresses, which dmesg_restrict hides. /conditions
// needs no such care: a kernel condition's message names its rule, never
// the line (kernellog.RuleMessage).
const withheld = "(withheld: kernel lines are served only on the authenticated --secure-listen-address)"

// plainMux is the unauthenticated port's: only /healthz when the secure
// port serves the rest, else everything but the kernel lines.
func (e endpoints) plainMux(secureAddr string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", e.healthz)
	mux.HandleFunc("/healthz/{type}", e.conditionHealth)
	if secureAddr != "" {
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "not here: /metrics, /conditions and /events are served on the secure port "+secureAddr, http.StatusNotFound)
		})
		return mux
	}
	e.addData(mux, false)
	return mux
}

// secureMux is the authenticated port's: everything, kernel lines too.
func (e endpoints) secureMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", e.healthz)
	mux.HandleFunc("/healthz/{type}", e.conditionHealth)
	e.addData(mux, true)
	return mux
}

func (e endpoints) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := e.health.check(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// conditionHealth is one condition as a health check, for a repairer that
// polls an HTTP endpoint per condition (node-readiness-controller's
// reporter, docs/remediation.md): 200 while the condition is False, 503
// while it is True or Unknown (hangwatch cannot tell), 404 for a type
// hangwatch does not own. The body is the condition's type, status and
// reason, and its message, all of which the Node shows too.
func (e endpoints) conditionHealth(w http.ResponseWriter, r *http.Request) {
	want := r.PathValue("type")
	for _, c := range e.conds.Conditions() {
		if c.Type != want {
			continue
		}
		code := http.StatusServiceUnavailable
		if c.Status == conditions.StatusFalse {
			code = http.StatusOK
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		fmt.Fprintf(w, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		return
	}
	http.Error(w, fmt.Sprintf("hangwatch owns no condition %q (it owns %v)", want, e.conds.Types()), http.StatusNotFound)
}

func (e endpoints) addData(mux *http.ServeMux, lines bool) {
	mux.Handle("/metrics", metrics.HandlerFor(e.reg, metrics.HandlerOpts{}))
	mux.HandleFunc("/conditions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"conditions": e.conds.Conditions()})
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, _ *http.Request) {
		events := e.events.snapshot()
		if !lines {
			for i := range events {
				events[i].Message = withheld
			}
		}
		writeJSON(w, map[string]any{"events": events})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// addCheck makes /healthz fail too when check does.
func (l *liveness) addCheck(check func() error) {
	l.mu.Lock()
	l.checks = append(l.checks, check)
	l.mu.Unlock()
}

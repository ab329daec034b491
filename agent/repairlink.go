package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/nodelink"
	"github.com/hangwatch/hangwatch/repair"
)

// linkedWithin is how recently the repair process must have read the view
// for hangwatch_repair_linked to be 1.
const linkedWithin = 30 * time.Second

// repairLink is the agent's end of the link to the repair process
// (`hangwatch repair`): a Unix socket only a process of the agent's own
// user (or root) may use. The agent serves its view and does, for the
// repair process, what needs the API server; the repair process, which
// can kill host processes, listens on nothing.
type repairLink struct {
	path  string
	clock clock.PassiveClock
	view  func() nodelink.View
	relay *repair.Relay
	// maintenance and fleet are nil without an API server.
	maintenance func(ctx context.Context) (string, error)
	fleet       repair.FleetBound
	notify      nodelink.Notifier
	fence       *fenceDesk // nil without an API server

	mu       sync.Mutex
	lastSeen time.Time

	server   *http.Server
	listener net.Listener
}

// newRepairLink builds the link when repair.agentSocket is set; nil
// otherwise.
func (a *Agent) newRepairLink() {
	path := a.cfg.Repair.AgentSocket
	if path == "" {
		return
	}
	a.repairConds = &repairConditions{}
	a.engine.Subscribe(a.repairConds)
	l := &repairLink{path: path, clock: a.o.Clock, view: a.repairView, notify: logNotifier{}}
	l.relay = repair.NewRelay(a.o.Registry, l.linked)
	if a.api != nil {
		l.maintenance, l.notify = a.api.maintenance, a.api.events
		if store, ok := a.api.client.(repair.LeaseStore); ok {
			l.fleet = &repair.LeaseSlots{Store: store, Node: a.api.node, Clock: a.o.Clock}
		}
		if fc, ok := a.api.client.(FenceClient); ok {
			l.fence = &fenceDesk{api: fc, node: a.api.node, clock: a.o.Clock, notify: a.api.events}
		}
	}
	a.link = l
}

// repairView is what the repair process reads: the conditions and each
// target's silence, on the agent's clock.
func (a *Agent) repairView() nodelink.View {
	what, d := a.prober.Unanswered(nodelink.WholeRuntimeCalls)
	v := nodelink.View{Conditions: a.repairConds.get(), Silences: map[repair.Target]nodelink.SilenceNote{repair.TargetRuntime: {What: what, For: d}},
		Lifecycle: a.prober.Silent(nodelink.LifecycleCalls)}
	if a.leases != nil && a.leases.Healthz != nil {
		v.Silences[repair.TargetKubelet] = nodelink.SilenceNote{What: "/healthz", For: a.leases.KubeletUnanswered()}
	}
	return v
}

// listen opens the socket: a stale socket from an earlier run is removed,
// anything else at the path is left and refused.
func (l *repairLink) listen() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("repair.agentSocket %s: %w", l.path, err)
	}
	if fi, err := os.Lstat(l.path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("repair.agentSocket %s: exists and is not a socket", l.path)
		}
		_ = os.Remove(l.path)
	}
	ln, err := net.Listen("unix", l.path)
	if err != nil {
		return fmt.Errorf("repair.agentSocket %s: %w", l.path, err)
	}
	if err := os.Chmod(l.path, 0o600); err != nil {
		_ = ln.Close()
		return fmt.Errorf("repair.agentSocket %s: %w", l.path, err)
	}
	l.listener = netutil.LimitListener(peerChecked{ln.(*net.UnixListener)}, 4)
	l.server = &http.Server{Handler: l.handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 150 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 8 << 10} // a fence report deletes pods at the API client's pace
	return nil
}

// serve answers until shutdown; a failure is reported on errs.
func (l *repairLink) serve(errs chan<- error) {
	go func() {
		if err := l.server.Serve(l.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("repair.agentSocket %s: %w", l.path, err)
		}
	}()
}

func (l *repairLink) shutdown(ctx context.Context) {
	_ = l.server.Shutdown(ctx)
	_ = os.Remove(l.path)
}

// linked tells whether the repair process read the view lately.
func (l *repairLink) linked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lastSeen.IsZero() && l.clock.Since(l.lastSeen) < linkedWithin
}

// peerChecked accepts only a process of the agent's own user, or root
// (SO_PEERCRED): the socket's mode says the same, and this holds where a
// mount or a umask does not.
type peerChecked struct{ *net.UnixListener }

func (p peerChecked) Accept() (net.Conn, error) {
	for {
		c, err := p.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid := peerUID(c)
		if uid == 0 || uid == os.Geteuid() {
			return c, nil
		}
		klog.InfoS("Refused a connection to the repair link: root or the agent's user only", "uid", uid, "agentUID", os.Geteuid())
		_ = c.Close()
	}
}

// peerUID is the connecting process's user; -1 when it cannot be read.
func peerUID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
}

func (l *repairLink) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+nodelink.ViewPath, l.serveView)
	mux.HandleFunc("POST "+nodelink.MaintenancePath, l.serveMaintenance)
	mux.HandleFunc("POST "+nodelink.FleetPath, l.serveFleet)
	mux.HandleFunc("POST "+nodelink.EventPath, l.serveEvent)
	mux.HandleFunc("POST "+nodelink.FenceOrderPath, l.serveFenceOrder)
	mux.HandleFunc("POST "+nodelink.FenceDeletePath, l.serveFenceDelete)
	mux.HandleFunc("POST "+nodelink.FenceReportPath, l.serveFenceReport)
	return mux
}

func (l *repairLink) serveView(w http.ResponseWriter, r *http.Request) {
	var t nodelink.Tally
	if !decodeChecked(w, r, &t, func() error { return repair.CheckTally(t) }) {
		return
	}
	l.relay.Set(t)
	l.mu.Lock()
	l.lastSeen = l.clock.Now()
	l.mu.Unlock()
	writeJSON(w, l.view())
}

func (l *repairLink) serveMaintenance(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	if !decodeChecked(w, r, &none, func() error { return nil }) {
		return
	}
	var a nodelink.MaintenanceAnswer
	if l.maintenance != nil {
		var err error
		if a.Condition, err = l.maintenance(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	writeJSON(w, a)
}

func (l *repairLink) serveFleet(w http.ResponseWriter, r *http.Request) {
	var ask nodelink.FleetAsk
	if !decodeChecked(w, r, &ask, func() error { return repair.CheckFleetAsk(ask) }) {
		return
	}
	if l.fleet == nil {
		http.Error(w, "no API server: the fleet's bound cannot be consulted", http.StatusServiceUnavailable)
		return
	}
	ok, why, err := l.fleet.Acquire(r.Context(), ask.Target, repair.FleetSettingsOf(ask))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, nodelink.FleetAnswer{OK: ok, Why: why})
}

func (l *repairLink) serveEvent(w http.ResponseWriter, r *http.Request) {
	var n nodelink.EventNote
	if !decodeChecked(w, r, &n, func() error { return repair.CheckEventNote(n) }) {
		return
	}
	if n.Warning {
		l.notify.Warning(n.Reason, n.Message)
	} else {
		l.notify.Normal(n.Reason, n.Message)
	}
	writeJSON(w, struct{}{})
}

// decodeChecked decodes the request into v and checks it, answering 400
// with what is wrong.
func decodeChecked(w http.ResponseWriter, r *http.Request, v any, check func() error) bool {
	err := nodelink.Decode(r.Body, v)
	if err == nil {
		err = check()
	}
	if err != nil {
		klog.V(2).InfoS("Repair link request refused", "path", r.URL.Path, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

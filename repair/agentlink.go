package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/nodelink"
)

// linkTimeout bounds one exchange on the link: the agent answers from
// memory, or from one API request (maintenance, the fleet's slots).
const linkTimeout = 10 * time.Second

// AgentLink is the repair process's end of the link: it reads the
// agent's view every tick and hands back what needs the API server. A
// view that cannot be read is no view: no verdict, no silence, so
// nothing is due and every spell starts again.
type AgentLink struct {
	socket string
	client *http.Client

	mu     sync.Mutex
	view   nodelink.View
	broken error // the last exchange's failure, logged once until one works
}

// NewAgentLink dials the agent at socket (a Unix socket's path) for each
// request.
func NewAgentLink(socket string) *AgentLink {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	return &AgentLink{socket: socket, client: &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: false, MaxIdleConns: 1}}}
}

// Run reads the view and lets r judge it, and fence (nil: none) step the
// fence, every tick until ctx ends.
//
// The fence steps in a goroutine of its own: while it kills, waits on a
// CSI node plugin or an unmount (each within its deadline), repair goes on
// judging and restarting.
func (l *AgentLink) Run(ctx context.Context, r *Repairer, fence func(context.Context), m *Metrics) {
	if fence != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			every(ctx, r.o.Clock, func() { fence(ctx) })
		}()
	}
	every(ctx, r.o.Clock, func() {
		l.Refresh(ctx, m.Tally())
		r.Step(ctx)
	})
}

// every calls step at once and then every tick until ctx ends.
func every(ctx context.Context, clk clock.WithTicker, step func()) {
	t := clk.NewTicker(tick)
	defer t.Stop()
	for {
		step()
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Refresh hands the agent the tally and keeps the view it answers with;
// on any failure the view is empty.
func (l *AgentLink) Refresh(ctx context.Context, tally nodelink.Tally) {
	var v nodelink.View
	err := l.call(ctx, nodelink.ViewPath, tally, &v)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		v = nodelink.View{}
		if l.broken == nil {
			klog.ErrorS(err, "Repair cannot read the agent's view: nothing is restarted until it can", "socket", l.socket)
		}
	} else if l.broken != nil {
		klog.InfoS("Repair reads the agent's view again", "socket", l.socket)
	}
	l.view, l.broken = v, err
}

// Conditions are the node's conditions of the last view.
func (l *AgentLink) Conditions() []nodelink.Condition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.view.Conditions
}

// Silence is target's silence as the last view said.
func (l *AgentLink) Silence(t Target) nodelink.Silence {
	return func() (string, time.Duration) {
		l.mu.Lock()
		defer l.mu.Unlock()
		s := l.view.Silences[t]
		return s.What, s.For
	}
}

// LifecycleSilence is how long, as the last view said, every call the
// pod lifecycle needs has gone without an answer.
func (l *AgentLink) LifecycleSilence() nodelink.Silence {
	return func() (string, time.Duration) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return "the pod lifecycle's calls", l.view.Lifecycle
	}
}

// Maintenance asks the agent for the Node's maintenance condition.
func (l *AgentLink) Maintenance(ctx context.Context) (string, error) {
	var a nodelink.MaintenanceAnswer
	err := l.call(ctx, nodelink.MaintenancePath, struct{}{}, &a)
	return a.Condition, err
}

// Acquire asks the agent for one of the fleet's slots.
func (l *AgentLink) Acquire(ctx context.Context, t Target, fs FleetSettings) (bool, string, error) {
	var a nodelink.FleetAnswer
	err := l.call(ctx, nodelink.FleetPath, nodelink.FleetAsk{Target: t, MaxRestarts: fs.MaxRestarts, Window: fs.Window, Namespace: fs.Namespace}, &a)
	return a.OK, a.Why, err
}

// FenceOrder asks the agent for the Node's fence request.
func (l *AgentLink) FenceOrder(ctx context.Context) (nodelink.FenceOrder, error) {
	var o nodelink.FenceOrder
	err := l.call(ctx, nodelink.FenceOrderPath, struct{}{}, &o)
	return o, err
}

// FenceDelete has the agent delete the pods the fence killed.
func (l *AgentLink) FenceDelete(ctx context.Context, d nodelink.FenceDeletion) (nodelink.FenceDeleted, error) {
	var a nodelink.FenceDeleted
	err := l.callFor(ctx, nodelink.FenceDeletePath, d, &a, nodelink.FenceReportTimeout)
	return a, err
}

// FenceReport hands the agent what the fence did.
func (l *AgentLink) FenceReport(ctx context.Context, r nodelink.FenceReport) error {
	return l.callFor(ctx, nodelink.FenceReportPath, r, nil, nodelink.FenceReportTimeout)
}

// Normal hands the agent a Normal Event for the Node.
func (l *AgentLink) Normal(reason, message string) { l.event(false, reason, message) }

// Warning hands the agent a Warning Event for the Node.
func (l *AgentLink) Warning(reason, message string) { l.event(true, reason, message) }

// event is told once; the repairer has logged it already.
func (l *AgentLink) event(warning bool, reason, message string) {
	ctx, cancel := context.WithTimeout(context.Background(), linkTimeout)
	defer cancel()
	if err := l.call(ctx, nodelink.EventPath, nodelink.EventNote{Warning: warning, Reason: reason, Message: message}, nil); err != nil {
		klog.ErrorS(err, "The agent did not take repair's Event", "reason", reason)
	}
}

// call POSTs in as JSON to path and decodes the answer into out (nil:
// none wanted).
func (l *AgentLink) call(ctx context.Context, path string, in, out any) error {
	return l.callFor(ctx, path, in, out, linkTimeout)
}

// callFor is call within timeout.
func (l *AgentLink) callFor(ctx context.Context, path string, in, out any, timeout time.Duration) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agent"+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return fmt.Errorf("link %s on %s: %w", path, l.socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("link %s on %s: %s: %s", path, l.socket, resp.Status, bytes.TrimSpace(msg))
	}
	if out == nil {
		return nil
	}
	if err := nodelink.Decode(resp.Body, out); err != nil {
		return fmt.Errorf("link %s on %s: %w", path, l.socket, err)
	}
	return nil
}

package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
)

// ReporterConfig sets how the Node's status is written.
type ReporterConfig struct {
	Node string
	// Heartbeat is how often lastHeartbeatTime is refreshed while nothing
	// changes (the kubelet's nodeStatusReportFrequency is 5m too).
	Heartbeat time.Duration
	// Coalesce gathers changes that come together into one write.
	Coalesce time.Duration
	// RetryMin and RetryMax bound the backoff after a failed request.
	RetryMin, RetryMax time.Duration
	// RejectedRetry is the slow retry of a patch the API server refused
	// (a 4xx such as 403 or 422: admission or RBAC), which sending again
	// soon would not change; jittered between half of it and all of it.
	RejectedRetry time.Duration
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// Overwrite are the owned types hangwatch writes even when another
	// field manager writes them too; any other such type is left to that
	// writer (node-problem-detector's KernelDeadlock, say), not fought over.
	Overwrite []string
	// OnShared, when set, is called once for each owned type found written
	// by other field managers, with them and whether hangwatch overwrites.
	OnShared func(condType string, managers []string, overwrite bool)
}

// Reporter writes the judge's conditions to the Node's status: only the
// types it owns, with a strategic-merge patch keyed on type, so the
// kubelet's conditions (Ready first of all) are never touched. It is a
// conditions.Subscriber of the judge, keeping only the latest state: a
// slow API server never holds the judge up, and the latest state is what
// gets written.
type Reporter struct {
	cfg      ReporterConfig
	nodes    NodeClient
	judge    Judge
	latest   conditions.Latest
	clk      clock.Clock
	metrics  *ReporterMetrics
	written  map[string]conditions.Condition // what the Node holds, as far as hangwatch knows
	lastSent time.Time
	failures int
	holdOff  bool                // the last patch was refused or throttled: no write before its retry, even on a change
	refusal  string              // the last refusal logged, so each is logged once
	shared   map[string][]string // owned types other managers write, as last reported
	yielded  map[string]bool     // owned types left to their other writers
}

// NodeClient reads the Node and patches its status.
type NodeClient interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	PatchNodeStatus(ctx context.Context, name string, pt types.PatchType, body []byte, fieldManager string) (*corev1.Node, error)
}

// Judge is what the reporter asks of the judge (a *conditions.Engine):
// to carry on the conditions read back from the Node, which it publishes
// (conditions.CauseRestored), returning the types it took.
type Judge interface {
	Restore(onNode []conditions.Condition) []string
}

// NewReporter returns a reporter of judge's conditions; m may be nil. It
// writes what it is told as a subscriber: subscribe it to the judge
// before Run.
func NewReporter(nodes NodeClient, judge Judge, cfg ReporterConfig, clk clock.Clock, m *ReporterMetrics) *Reporter {
	return &Reporter{cfg: cfg, nodes: nodes, judge: judge, clk: clk, metrics: m, written: map[string]conditions.Condition{},
		shared: map[string][]string{}, yielded: map[string]bool{}}
}

// Judged keeps the latest state for the next write.
func (r *Reporter) Judged(j conditions.Judgement) { r.latest.Judged(j) }

// Run restores the Node's conditions, then writes every change and the
// heartbeat until ctx ends. While the API server cannot be reached the
// latest state is kept and written when it answers again.
func (r *Reporter) Run(ctx context.Context) {
	for r.failures = 0; ctx.Err() == nil; r.failures++ {
		err := r.restore(ctx)
		if err == nil {
			break
		}
		if r.failures == 0 {
			klog.ErrorS(err, "Reading the Node's conditions failed; retrying before the first status write", "node", r.cfg.Node)
		}
		r.wait(ctx, nil, r.clk.Now().Add(r.retryDelay()))
	}
	r.failures = 0
	for ctx.Err() == nil {
		next := r.flush(ctx)
		changed := r.latest.Wake()
		if r.holdOff {
			changed = nil
		}
		if r.wait(ctx, changed, next) {
			r.wait(ctx, nil, r.clk.Now().Add(r.cfg.Coalesce)) // let changes that come together go out as one write
		}
	}
}

// restore reads the Node (GET nodes/<name>: a node identity may not read
// nodes/<name>/status), notes who else writes its types, removes the types
// hangwatch wrote before and no longer owns, and carries on its conditions
// of the owned types no other field manager writes.
func (r *Reporter) restore(ctx context.Context) error {
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	r.removeStale(ctx, r.inspect(node))
	var found []conditions.Condition
	for _, c := range node.Status.Conditions {
		if len(r.shared[string(c.Type)]) > 0 {
			continue // another writer's values, whether left to it or overwritten: not hangwatch's to carry on
		}
		cond := conditions.Condition{Type: string(c.Type), Status: conditions.Status(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: c.LastTransitionTime.Time}
		found = append(found, cond)
		r.written[cond.Type] = cond
	}
	if took := r.judge.Restore(found); len(took) > 0 {
		klog.InfoS("Carrying on the Node's conditions", "node", r.cfg.Node, "types", took)
	}
	return nil
}

// flush writes the conditions when they differ from what the Node holds or
// the heartbeat is due, and returns when to look again.
func (r *Reporter) flush(ctx context.Context) time.Time {
	now := r.clk.Now()
	heartbeat := now.Sub(r.lastSent) >= r.cfg.Heartbeat
	if !r.differs(r.writable()) && !heartbeat {
		return r.lastSent.Add(r.cfg.Heartbeat)
	}
	if heartbeat && !r.lastSent.IsZero() {
		r.lookAgain(ctx) // who else writes the types shows only on a read
	}
	snap := r.writable()
	if len(snap) == 0 {
		r.lastSent = now
		return now.Add(r.cfg.Heartbeat)
	}
	node, err := r.patch(ctx, snap, now)
	r.metrics.patched(err)
	if err != nil {
		return now.Add(r.failed(err))
	}
	r.inspect(node)
	if r.failures > 0 {
		klog.InfoS("Writing the Node's conditions works again", "node", r.cfg.Node, "failedAttempts", r.failures)
	}
	r.failures, r.holdOff, r.refusal = 0, false, ""
	r.lastSent = now
	for _, c := range snap {
		r.written[c.Type] = c
	}
	return now.Add(r.cfg.Heartbeat)
}

func (r *Reporter) differs(snap []conditions.Condition) bool {
	for _, c := range snap {
		w, ok := r.written[c.Type]
		if !ok || w.Status != c.Status || w.Reason != c.Reason || w.Message != c.Message ||
			!w.LastTransitionTime.Equal(c.LastTransitionTime) {
			return true
		}
	}
	return false
}

// failed logs and counts a failed patch and returns when to try again: a
// refusal (4xx) slowly, logged once for each distinct answer; a throttle
// (429) no sooner than the API server asked; anything else with backoff,
// logged once per run of failures.
func (r *Reporter) failed(err error) time.Duration {
	defer func() { r.failures++ }()
	if status, ok := refused(err); ok {
		r.metrics.refused(status.Code)
		r.holdOff = true
		delay := jitter(r.cfg.RejectedRetry)
		if text := fmt.Sprint(status.Code, status.Reason, status.Message); text != r.refusal {
			r.refusal = text
			klog.ErrorS(err, "The API server refused the Node's conditions; retrying slowly", "node", r.cfg.Node,
				"code", status.Code, "reason", status.Reason, "causes", causes(status), "retryIn", delay.Round(time.Second))
		}
		return delay
	}
	delay := r.retryDelay()
	if apierrors.IsTooManyRequests(err) { // client-go has already waited out Retry-After within the request's timeout
		r.holdOff = true
		if secs, ok := apierrors.SuggestsClientDelay(err); ok {
			delay = max(delay, time.Duration(secs)*time.Second)
		}
	}
	if r.failures == 0 {
		klog.ErrorS(err, "Writing the Node's conditions failed; the latest state is kept and retried", "node", r.cfg.Node, "retryIn", delay.Round(time.Millisecond))
	}
	return delay
}

// refused returns the API server's answer when it refused the request
// itself (4xx), as opposed to being busy (408, 429) or away.
func refused(err error) (metav1.Status, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return metav1.Status{}, false
	}
	s := st.Status()
	code := int(s.Code)
	return s, code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// causes lists the field causes of a refusal (a 422's invalid fields).
func causes(s metav1.Status) []string {
	if s.Details == nil {
		return nil
	}
	out := make([]string, 0, len(s.Details.Causes))
	for _, c := range s.Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

// retryDelay is an exponential backoff with jitter, so a fleet that lost
// its API server does not come back in step.
func (r *Reporter) retryDelay() time.Duration {
	d := r.cfg.RetryMin << min(r.failures, 16)
	if d <= 0 || d > r.cfg.RetryMax {
		d = r.cfg.RetryMax
	}
	return jitter(d)
}

// jitter returns a random duration from d/2 to d.
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) //nolint:gosec // jitter, not security
}

// wait returns true when changed fired, false at the deadline or when ctx
// ends.
func (r *Reporter) wait(ctx context.Context, changed <-chan struct{}, until time.Time) bool {
	t := r.clk.NewTimer(until.Sub(r.clk.Now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
		return true
	case <-t.C():
	}
	return false
}

// nodeConditions renders the owned conditions for the patch.
func nodeConditions(snap []conditions.Condition, now time.Time) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(snap))
	for _, c := range snap {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
			Reason: c.Reason, Message: c.Message, LastHeartbeatTime: metav1.NewTime(now),
			LastTransitionTime: metav1.NewTime(c.LastTransitionTime)})
	}
	return out
}

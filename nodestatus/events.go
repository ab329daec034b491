package nodestatus

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
)

// EventSource names hangwatch as the reporting component of its Events.
const EventSource = "hangwatch"

// Events records every transition of a condition as a core/v1 Event on the
// Node (a node identity may create core/v1 Events but not events.k8s.io
// ones). Its recorder, as client-go's, raises the count of a repeat instead
// of creating another, rate-limits per node (a burst of 25, then one per 5
// minutes) and retries while the API server is away. It hears the
// transitions as a conditions.Subscriber of the engine.
type Events struct {
	emit    func(eventType, reason, message string)
	stop    func()
	metrics *ReporterMetrics

	mu       sync.Mutex
	restored bool                            // the Node's conditions were read back
	known    map[string]conditions.Condition // by type, the state last accounted for
}

// NewEvents starts recording to the API server through sink, on clk;
// each request is bounded by timeout.
func NewEvents(sink EventSink, node string, m *ReporterMetrics, timeout time.Duration, clk clock.Clock) *Events {
	// UID is the node's name, as the kubelet does, so `kubectl describe
	// node` lists the events.
	ref := corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node), APIVersion: "v1"}
	rec := newRecorder(sink, clk, ref, corev1.EventSource{Component: EventSource, Host: node}, timeout)
	go rec.run()
	return &Events{emit: rec.record, stop: rec.shutdown, metrics: m, known: map[string]conditions.Condition{}}
}

// Judged records the transitions of a judgement, and compares the
// conditions with the Node's once they were read back and carried on
// (conditions.CauseRestored).
func (e *Events) Judged(j conditions.Judgement) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.Cause == conditions.CauseRestored {
		e.restore(j.OnNode, j.Conditions)
		return
	}
	for _, c := range j.Changes {
		e.transition(c.Before, c.After)
	}
}

// transition records a change of a condition, when it is one worth an
// Event: any move to True, a new reason while True, and a clear from True.
// Leaving Unknown for False at start is not news. Until the Node's
// conditions are read back (restore) it records nothing: a change is
// news only against what the Node holds, so a restart that finds a
// problem still there tells nobody again. Called with e.mu held.
func (e *Events) transition(before, after conditions.Condition) {
	if !e.restored {
		return
	}
	if prev, ok := e.known[after.Type]; ok {
		before = prev
	}
	e.known[after.Type] = after
	e.record(before, after)
}

// restore compares each condition, as it is once the Node's conditions
// have been read back and carried on, with the Node's own: one that moved
// in a way worth an Event gets it now, one carried on unchanged none.
// Called with e.mu held.
func (e *Events) restore(onNode, conds []conditions.Condition) {
	e.restored = true
	byType := map[string]conditions.Condition{}
	for _, c := range onNode {
		byType[c.Type] = c
	}
	for _, c := range conds {
		e.known[c.Type] = c
		e.record(byType[c.Type], c)
	}
}

func (e *Events) record(before, after conditions.Condition) {
	eventType, ok := transitionType(before, after)
	if !ok {
		return
	}
	e.emit(eventType, after.Reason, EventMessage(after))
	e.metrics.evented(after.Type, eventType)
}

// Shared records, once, that another field manager writes a condition
// hangwatch owns, and what hangwatch does about it.
func (e *Events) Shared(condType string, managers []string, overwrite bool) {
	what := "hangwatch leaves it to them (overwriteSharedConditions would make it write it anyway)"
	if overwrite {
		what = "hangwatch writes it anyway (overwriteSharedConditions), so the last writer wins"
	}
	e.emit(corev1.EventTypeWarning, "ConditionSharedWithAnotherWriter",
		fmt.Sprintf("Node condition %s is also written by %s; %s", condType, strings.Join(managers, ", "), what))
}

// Subscribe makes the Node's status writer w and its Events e subscribers
// of engine, w telling e of each owned condition it finds written by
// another manager (ConditionSharedWithAnotherWriter). Call before w runs.
func Subscribe(engine *conditions.Engine, w *Reporter, e *Events) {
	w.cfg.OnShared = e.Shared
	engine.Subscribe(w)
	engine.Subscribe(e)
}

// Warning records a Warning Event on the Node about hangwatch itself (a
// config reload it refused, say), rate-limited like the others.
func (e *Events) Warning(reason, message string) { e.emit(corev1.EventTypeWarning, reason, message) }

// Normal records a Normal Event on the Node about what hangwatch did (a
// repair, say), rate-limited like the others.
func (e *Events) Normal(reason, message string) { e.emit(corev1.EventTypeNormal, reason, message) }

// Shutdown stops recording.
func (e *Events) Shutdown() { e.stop() }

func transitionType(before, after conditions.Condition) (string, bool) {
	switch {
	case after.Status == conditions.StatusTrue && (before.Status != conditions.StatusTrue || before.Reason != after.Reason):
		return corev1.EventTypeWarning, true
	case after.Status == conditions.StatusFalse && before.Status == conditions.StatusTrue:
		return corev1.EventTypeNormal, true
	}
	return "", false
}

// EventMessage is the text of a transition's Event.
func EventMessage(c conditions.Condition) string {
	return fmt.Sprintf("Node condition %s is now %s: %s", c.Type, c.Status, c.Message)
}

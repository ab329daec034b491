package conditions

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// EventSource names hangwatch as the reporting component of its Events.
const EventSource = "hangwatch"

// Events records every transition of a condition as a core/v1 Event on the
// Node (a node identity may create core/v1 Events but not events.k8s.io
// ones). Its recorder, as client-go's, raises the count of a repeat instead
// of creating another, rate-limits per node (a burst of 25, then one per 5
// minutes) and retries while the API server is away.
type Events struct {
	emit    func(eventType, reason, message string)
	stop    func()
	metrics *ReporterMetrics

	mu       sync.Mutex
	restored bool                 // the Node's conditions were read back
	known    map[string]Condition // by type, the state last accounted for
}

// NewEvents starts recording to the API server through sink; each request
// is bounded by timeout.
func NewEvents(sink EventSink, node string, m *ReporterMetrics, timeout time.Duration) *Events {
	// UID is the node's name, as the kubelet does, so `kubectl describe
	// node` lists the events.
	ref := corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node), APIVersion: "v1"}
	rec := newRecorder(sink, clock.RealClock{}, ref, corev1.EventSource{Component: EventSource, Host: node}, timeout)
	go rec.run()
	return &Events{emit: rec.record, stop: rec.shutdown, metrics: m, known: map[string]Condition{}}
}

// Transition records a change of a condition, when it is one worth an
// Event: any move to True, a new reason while True, and a clear from True.
// Leaving Unknown for False at start is not news. Until the Node's
// conditions are read back (Restored) it records nothing: a change is
// news only against what the Node holds, so a restart that finds a
// problem still there tells nobody again.
func (e *Events) Transition(before, after Condition) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.restored {
		return
	}
	if prev, ok := e.known[after.Type]; ok {
		before = prev
	}
	e.known[after.Type] = after
	e.record(before, after)
}

// Restored compares each condition of set, once the Node's conditions
// have been read back and carried on, with the Node's own: one that moved
// in a way worth an Event gets it now, one carried on unchanged none.
func (e *Events) Restored(onNode []Condition, set *Set) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.restored = true
	byType := map[string]Condition{}
	for _, c := range onNode {
		byType[c.Type] = c
	}
	for _, c := range set.Snapshot() { // taken under e.mu: a change after it comes through Transition
		e.known[c.Type] = c
		e.record(byType[c.Type], c)
	}
}

func (e *Events) record(before, after Condition) {
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

// Warning records a Warning Event on the Node about hangwatch itself (a
// config reload it refused, say), rate-limited like the others.
func (e *Events) Warning(reason, message string) { e.emit(corev1.EventTypeWarning, reason, message) }

// Normal records a Normal Event on the Node about what hangwatch did (a
// repair, say), rate-limited like the others.
func (e *Events) Normal(reason, message string) { e.emit(corev1.EventTypeNormal, reason, message) }

// Shutdown stops recording.
func (e *Events) Shutdown() { e.stop() }

func transitionType(before, after Condition) (string, bool) {
	switch {
	case after.Status == corev1.ConditionTrue && (before.Status != corev1.ConditionTrue || before.Reason != after.Reason):
		return corev1.EventTypeWarning, true
	case after.Status == corev1.ConditionFalse && before.Status == corev1.ConditionTrue:
		return corev1.EventTypeNormal, true
	}
	return "", false
}

// EventMessage is the text of a transition's Event.
func EventMessage(c Condition) string {
	return fmt.Sprintf("Node condition %s is now %s: %s", c.Type, c.Status, c.Message)
}

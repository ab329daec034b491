package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// EventSink creates and patches core/v1 Events.
type EventSink interface {
	CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error)
	PatchEvent(ctx context.Context, namespace, name string, body []byte) (*corev1.Event, error)
}

// The recorder's limits, client-go's where it has one: a burst of 25
// Events per object, then one per 5 minutes; a failed send tried 12 times,
// about 10 s apart.
const (
	eventBurst      = 25
	eventRefill     = 5 * time.Minute
	eventTries      = 12
	eventRetryWait  = 10 * time.Second
	eventQueueSize  = 100 // waiting to be sent; beyond it the oldest is dropped
	eventRepeatsMax = 64  // distinct Events remembered for their counts
)

// recorder sends a Node's Events: a repeat of the same type, reason and
// message raises the count of the Event already sent (a PATCH), a burst
// beyond the spam limit is dropped, and a send that fails is retried while
// the API server is away, in order, without ever blocking the caller.
type recorder struct {
	sink    EventSink
	clk     clock.Clock
	ref     corev1.ObjectReference
	source  corev1.EventSource
	timeout time.Duration

	mu       sync.Mutex
	tokens   float64
	refilled time.Time
	repeats  map[string]*corev1.Event // by type, reason and message: the latest of each
	queue    []*corev1.Event
	lastName int64 // the nanoseconds of the last new Event's name
	dropped  int
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

func newRecorder(sink EventSink, clk clock.Clock, ref corev1.ObjectReference, source corev1.EventSource, timeout time.Duration) *recorder {
	return &recorder{sink: sink, clk: clk, ref: ref, source: source, timeout: timeout, tokens: eventBurst,
		refilled: clk.Now(), repeats: map[string]*corev1.Event{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// record queues an Event; it never waits for the API server.
func (r *recorder) record(eventType, reason, message string) {
	r.mu.Lock()
	now := r.clk.Now()
	if !r.allow(now) {
		r.mu.Unlock()
		return
	}
	r.enqueue(r.next(eventType, reason, message, now))
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// allow is the spam filter: a token bucket per object (there is one).
func (r *recorder) allow(now time.Time) bool {
	r.tokens = min(eventBurst, r.tokens+float64(now.Sub(r.refilled))/float64(eventRefill))
	r.refilled = now
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// next is the Event to send: a new one, or the repeat of one sent before
// with its count raised.
func (r *recorder) next(eventType, reason, message string, now time.Time) *corev1.Event {
	key := eventType + "\x00" + reason + "\x00" + message
	if prev, ok := r.repeats[key]; ok {
		ev := prev.DeepCopy()
		ev.Count++
		ev.LastTimestamp = metav1.NewTime(now)
		r.repeats[key] = ev
		return ev
	}
	if len(r.repeats) >= eventRepeatsMax {
		clear(r.repeats)
	}
	// Named for the time as client-go does, and distinct even when the
	// clock has not moved since the last one (a fake clock, say).
	r.lastName = max(now.UnixNano(), r.lastName+1)
	t := metav1.NewTime(now)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", r.ref.Name, r.lastName), Namespace: metav1.NamespaceDefault},
		InvolvedObject: r.ref, Reason: reason, Message: message, Type: eventType, Count: 1,
		FirstTimestamp: t, LastTimestamp: t, Source: r.source,
		ReportingController: r.source.Component, ReportingInstance: r.source.Component + "-" + r.source.Host}
	r.repeats[key] = ev
	return ev
}

func (r *recorder) enqueue(ev *corev1.Event) {
	if len(r.queue) >= eventQueueSize {
		r.queue = r.queue[1:]
		r.dropped++
		if r.dropped == 1 || r.dropped%100 == 0 {
			klog.InfoS("Events dropped: the API server takes them slower than they come", "node", r.ref.Name, "dropped", r.dropped)
		}
	}
	r.queue = append(r.queue, ev)
}

func (r *recorder) pop() *corev1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return nil
	}
	ev := r.queue[0]
	r.queue = r.queue[1:]
	return ev
}

// run sends the queued Events in order until shutdown.
func (r *recorder) run() {
	defer close(r.done)
	for {
		for ev := r.pop(); ev != nil; ev = r.pop() {
			if !r.sendWithRetries(ev) {
				return
			}
		}
		select {
		case <-r.wake:
		case <-r.stop:
			return
		}
	}
}

// sendWithRetries tries an Event up to eventTries times; it returns false
// when the recorder was shut down meanwhile.
func (r *recorder) sendWithRetries(ev *corev1.Event) bool {
	for try := 1; ; try++ {
		err := r.send(ev)
		if err == nil || !retriable(err) || try == eventTries {
			if err != nil {
				klog.ErrorS(err, "An Event could not be sent; dropped", "node", r.ref.Name, "reason", ev.Reason, "tries", try)
			}
			return true
		}
		wait := eventRetryWait
		if try == 1 {
			wait = time.Duration(rand.Int64N(int64(eventRetryWait))) // spread the first retry as client-go does
		}
		select {
		case <-r.clk.After(wait):
		case <-r.stop:
			return false
		}
	}
}

// send creates the Event, or for a repeat patches its count; a repeat
// whose Event is gone is created again.
func (r *recorder) send(ev *corev1.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	if ev.Count > 1 {
		body, err := json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
		if err != nil {
			return fmt.Errorf("encode event patch: %w", err)
		}
		_, err = r.sink.PatchEvent(ctx, ev.Namespace, ev.Name, body)
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	_, err := r.sink.CreateEvent(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// retriable says whether sending again may help: not for a request the API
// server refused as such (4xx other than 408 and 429).
func retriable(err error) bool {
	_, refusedOutright := refused(err)
	return !refusedOutright
}

// shutdown stops sending; Events still queued are lost, as with client-go.
func (r *recorder) shutdown() {
	close(r.stop)
	select {
	case <-r.done:
	case <-time.After(r.timeout):
	}
}

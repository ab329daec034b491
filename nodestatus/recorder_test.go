package nodestatus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/internal/clocktest"
)

// fakeEventSink records what reaches the API server; fail, while set,
// answers every request with its error.
type fakeEventSink struct {
	mu      sync.Mutex
	fail    error
	events  map[string]*corev1.Event
	actions []string
}

func (s *fakeEventSink) CreateEvent(_ context.Context, ev *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, "create "+ev.Reason)
	if s.fail != nil {
		return nil, s.fail
	}
	s.events[ev.Name] = ev.DeepCopy()
	return ev, nil
}

func (s *fakeEventSink) PatchEvent(_ context.Context, _, name string, body []byte) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, "patch "+string(body[:strings.Index(string(body), ",")]))
	if s.fail != nil {
		return nil, s.fail
	}
	ev, ok := s.events[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, name)
	}
	return ev, nil
}

func (s *fakeEventSink) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions...)
}

func newTestRecorder() (*recorder, *fakeEventSink, *testclock.FakeClock) {
	sink := &fakeEventSink{events: map[string]*corev1.Event{}}
	clk := testclock.NewFakeClock(t0)
	r := newRecorder(sink, clk, corev1.ObjectReference{Kind: "Node", Name: "node-a"}, corev1.EventSource{Component: EventSource, Host: "node-a"}, time.Second)
	return r, sink, clk
}

func (s *fakeEventSink) count() int { return len(s.seen()) }

func TestRecorderCountsRepeatsAndLimitsBursts(t *testing.T) {
	r, sink, clk := newTestRecorder()
	go r.run()
	defer r.shutdown()
	for i := 0; i < 3; i++ {
		r.record(corev1.EventTypeWarning, "VersionHung", "hung")
	}
	clocktest.Await(t, "three requests", func() bool { return sink.count() == 3 })
	want := []string{"create VersionHung", `patch {"count":2`, `patch {"count":3`}
	if got := sink.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q, want %q", got, want)
	}
	for i := 0; i < eventBurst; i++ {
		r.record(corev1.EventTypeNormal, "Other", strings.Repeat("x", i))
	}
	clocktest.Await(t, "the burst sent", func() bool { return sink.count() == eventBurst })
	r.mu.Lock()
	queued := len(r.queue)
	r.mu.Unlock()
	if queued != 0 {
		t.Errorf("%d Events past the burst of %d were queued, want them dropped", queued, eventBurst)
	}
	clk.Step(eventRefill)
	r.record(corev1.EventTypeNormal, "AfterTheRefill", "one more")
	clocktest.Await(t, "one more after the refill", func() bool { return sink.count() == eventBurst+1 })
	if got := sink.seen(); got[len(got)-1] != "create AfterTheRefill" {
		t.Errorf("after 5 minutes the limit let nothing through: %q", got[len(got)-1])
	}
}

func TestRecorderRetriesWhileTheAPIServerIsAway(t *testing.T) {
	r, sink, clk := newTestRecorder()
	go r.run()
	defer r.shutdown()
	sink.mu.Lock()
	sink.fail = errors.New("connection refused")
	sink.mu.Unlock()
	r.record(corev1.EventTypeWarning, "VersionHung", "hung")
	r.record(corev1.EventTypeNormal, "RuntimeResponsive", "fine")
	// The first send failed; the retry waits, the second Event behind it.
	clocktest.Await(t, "the wait to retry", func() bool { return sink.count() == 1 && clk.Waiters() == 1 })
	clk.Step(eventRetryWait)
	clocktest.Await(t, "the second wait", func() bool { return sink.count() == 2 && clk.Waiters() == 1 })
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	clk.Step(eventRetryWait)
	clocktest.Await(t, "both sent", func() bool { return sink.count() == 4 })
	got := sink.seen()
	if len(got) != 4 || got[2] != "create VersionHung" || got[3] != "create RuntimeResponsive" {
		t.Fatalf("sent %q: want two failed tries, then both Events in order", got)
	}
}

func TestRecorderDropsTheOldestBeyondItsQueue(t *testing.T) {
	r, _, _ := newTestRecorder() // not running: nothing is sent
	for i := 0; i < eventQueueSize+5; i++ {
		r.enqueue(&corev1.Event{Message: strings.Repeat("x", i)})
	}
	if len(r.queue) != eventQueueSize || r.dropped != 5 || r.queue[0].Message != strings.Repeat("x", 5) {
		t.Errorf("queue %d, dropped %d, first %q: want the newest %d", len(r.queue), r.dropped, r.queue[0].Message, eventQueueSize)
	}
}

// TestRecorderNamesEventsApartOnAStillClock: two Events made at the same
// instant of the recorder's clock are two Events, not one created twice.
func TestRecorderNamesEventsApartOnAStillClock(t *testing.T) {
	r, sink, _ := newTestRecorder()
	go r.run()
	defer r.shutdown()
	r.record(corev1.EventTypeWarning, "RuntimeHung", "hung")
	r.record(corev1.EventTypeWarning, "RepairRefused", "refused")
	clocktest.Await(t, "two creates", func() bool { return sink.count() == 2 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.events) != 2 {
		t.Fatalf("%d Events kept, want 2 named apart", len(sink.events))
	}
}

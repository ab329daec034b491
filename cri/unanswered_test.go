package cri

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestUnansweredRestartsOnAnyAnswer: a method's silence is timed from the
// first call sent after its last answer, only while a call is out; any
// answer, however late, starts it again, and an answer while an older call
// is still out times the silence from that answer.
func TestUnansweredRestartsOnAnyAnswer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	tr := newInflightTracker(clk)
	methods := []string{MethodVersion, MethodListContainers}
	if m, d := tr.Unanswered(methods); d != 0 {
		t.Fatalf("nothing out: %s %v", m, d)
	}
	slow := callKey{method: MethodListContainers}
	for range 10 { // every call answered, each 2.5 s late
		tr.begin(slow, clk.Now())
		clk.Step(2500 * time.Millisecond)
		if _, d := tr.Unanswered(methods); d != 2500*time.Millisecond {
			t.Fatalf("a call out 2.5 s: silence %v", d)
		}
		tr.end(slow, CallResult{Method: MethodListContainers, Class: ClassTimeout}) // late, but an answer
		if _, d := tr.Unanswered(methods); d != 0 {
			t.Fatalf("after a late answer: silence %v, want 0", d)
		}
	}
	hung := callKey{method: MethodVersion}
	beat := callKey{method: MethodListContainers, beat: true}
	tr.begin(hung, clk.Now())
	clk.Step(5 * time.Second)
	tr.begin(beat, clk.Now())
	clk.Step(5 * time.Second)
	if m, d := tr.Unanswered(methods); m != MethodVersion || d != 10*time.Second {
		t.Fatalf("Version out 10 s: %s %v", m, d)
	}
	// a call that ends only at its lifetime was not answered: the next one
	// goes on from the first
	tr.end(hung, CallResult{Method: MethodVersion, Class: ClassTimeout, Err: "context deadline exceeded"})
	tr.begin(hung, clk.Now())
	clk.Step(time.Second)
	if m, d := tr.Unanswered(methods); m != MethodVersion || d != 11*time.Second {
		t.Fatalf("after a lifetime ran out: %s %v, want Version 11s", m, d)
	}
	// the refused socket is an answer: nothing listens, not a hang
	tr.end(hung, CallResult{Method: MethodVersion, Class: ClassUnreachable, Err: "connection refused"})
	if m, d := tr.Unanswered([]string{MethodVersion}); d != 0 {
		t.Fatalf("refused: %s %v, want 0", m, d)
	}
	// an answer to one ListContainers while another is out: timed from it
	tr.begin(slow, clk.Now())
	tr.end(beat, CallResult{Method: MethodListContainers})
	clk.Step(3 * time.Second)
	if m, d := tr.Unanswered(methods); m != MethodListContainers || d != 3*time.Second {
		t.Fatalf("answered 3 s ago with another call out: %s %v", m, d)
	}
}

// TestInFlightAgeOutlivesACallsLifetime: the in-flight gauge's age of a
// method whose call ran out its lifetime and was sent again goes on from
// the first call, and drops to 0 at the first answer.
func TestInFlightAgeOutlivesACallsLifetime(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	tr := newInflightTracker(clk)
	list := callKey{method: MethodListPodSandbox}
	tr.begin(list, clk.Now())
	clk.Step(2 * time.Minute)
	tr.end(list, CallResult{Method: MethodListPodSandbox, Class: ClassTimeout, Err: "context deadline exceeded"})
	if ages := tr.oldestByMethod(); ages[MethodListPodSandbox] != 0 {
		t.Fatalf("nothing out between the lifetime and the next call: %v", ages)
	}
	tr.begin(list, clk.Now())
	clk.Step(30 * time.Second)
	if ages := tr.oldestByMethod(); ages[MethodListPodSandbox] != 150*time.Second {
		t.Fatalf("sent again after 2m, out 30s: %v, want 2m30s", ages)
	}
	tr.end(list, CallResult{Method: MethodListPodSandbox})
	if ages := tr.oldestByMethod(); ages[MethodListPodSandbox] != 0 {
		t.Fatalf("answered: %v, want 0", ages)
	}
}

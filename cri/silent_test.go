package cri

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// lifecycle are the calls the kubelet's pod lifecycle needs, as the fence
// reads them.
var lifecycle = []string{MethodStatus, MethodListPodSandbox, MethodListContainers, MethodStreamPodSandboxes, MethodStreamContainers}

// TestSilentOnlyWhenEveryLifecycleCallIs: the fence's silence is the
// shortest time since one of the lifecycle calls was answered.
// ImageFsInfo hanging alone, a list that answers slowly while Status
// answers, and a stream that delivers a message every 500 ms are not
// silent; a frozen runtime is, from its last answer, even beside a stream
// it answered Unimplemented long before.
func TestSilentOnlyWhenEveryLifecycleCallIs(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	tr := newInflightTracker(clk)
	if d := tr.Silent(lifecycle); d != 0 {
		t.Fatalf("nothing sent: %v", d)
	}
	status, list, imagefs := callKey{method: MethodStatus}, callKey{method: MethodListContainers}, callKey{method: MethodImageFsInfo}
	tr.begin(imagefs, clk.Now())
	for range 10 { // ImageFsInfo out for 3 minutes, the lifecycle calls answer
		tr.begin(status, clk.Now())
		tr.begin(list, clk.Now())
		clk.Step(300 * time.Millisecond)
		tr.end(status, CallResult{Method: MethodStatus})
		tr.end(list, CallResult{Method: MethodListContainers})
		clk.Step(4700 * time.Millisecond)
	}
	if d := tr.Silent(lifecycle); d != 4700*time.Millisecond {
		t.Fatalf("only ImageFsInfo out: silent %v, want 4.7s (since the last cycle's answers)", d)
	}
	// a list out for 100 s while Status answers each cycle
	tr.begin(list, clk.Now())
	for range 20 {
		tr.begin(status, clk.Now())
		clk.Step(5 * time.Second)
		tr.end(status, CallResult{Method: MethodStatus})
		if d := tr.Silent(lifecycle); d != 0 {
			t.Fatalf("a slow list, Status answering: silent %v, want 0", d)
		}
	}
	tr.end(list, CallResult{Method: MethodListContainers})
	// a stream that delivers every 500 ms for a minute
	stream := callKey{method: MethodStreamContainers}
	tr.begin(stream, clk.Now())
	tr.begin(status, clk.Now())
	tr.begin(list, clk.Now())
	for range 120 {
		clk.Step(500 * time.Millisecond)
		tr.heard(MethodStreamContainers)
	}
	if d := tr.Silent(lifecycle); d != 0 {
		t.Fatalf("a stream delivering every 500 ms: silent %v, want 0", d)
	}
	// a stream the runtime lacks answered once, long ago: it does not
	// hide a freeze of the others
	tr.end(stream, CallResult{Method: MethodStreamContainers, Class: ClassUnimplemented, Err: "unimplemented"})
	clk.Step(time.Minute)
	tr.end(status, CallResult{Method: MethodStatus})
	tr.end(list, CallResult{Method: MethodListContainers})
	tr.begin(callKey{method: MethodListPodSandbox}, clk.Now())
	tr.end(callKey{method: MethodListPodSandbox}, CallResult{Method: MethodListPodSandbox})
	// frozen from here: every lifecycle call out, nothing heard
	tr.begin(status, clk.Now())
	tr.begin(list, clk.Now())
	tr.begin(callKey{method: MethodListPodSandbox}, clk.Now())
	clk.Step(30 * time.Second)
	if d := tr.Silent(lifecycle); d != 30*time.Second {
		t.Fatalf("frozen for 30 s: silent %v", d)
	}
}

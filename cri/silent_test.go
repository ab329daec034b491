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
// shortest of the lifecycle calls' silences. ImageFsInfo hanging alone, a
// list that answers slowly while Status answers, and a stream that
// delivers a message every 500 ms are not silent; a frozen runtime is,
// from the last call sent.
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
		clk.Step(18 * time.Second)
	}
	if d := tr.Silent(lifecycle); d != 0 {
		t.Fatalf("only ImageFsInfo out: silent %v, want 0", d)
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
	// frozen: every lifecycle call out, nothing heard
	tr.begin(callKey{method: MethodListPodSandbox}, clk.Now())
	tr.end(stream, CallResult{Method: MethodStreamContainers})
	tr.begin(stream, clk.Now())
	clk.Step(30 * time.Second)
	if d := tr.Silent(lifecycle); d != 30*time.Second {
		t.Fatalf("frozen for 30 s since the last send: silent %v", d)
	}
}

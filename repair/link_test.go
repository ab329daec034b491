package repair

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/hangwatch/hangwatch/nodelink"
)

// TestNoAgentIsNoView: a link whose agent does not answer holds no
// verdict and no silence, so nothing is due.
func TestNoAgentIsNoView(t *testing.T) {
	dir, err := os.MkdirTemp("", "nolink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l := NewAgentLink(filepath.Join(dir, "absent.sock"))
	l.view = nodelink.View{Conditions: []nodelink.Condition{{Type: "RuntimeHung", True: true}}, Silences: map[Target]nodelink.SilenceNote{TargetRuntime: {What: "Version", For: 1e12}}}
	l.Refresh(context.Background(), NewMetrics().Tally())
	if what, d := l.Silence(TargetRuntime)(); len(l.Conditions()) != 0 || what != "" || d != 0 {
		t.Errorf("after a failed read: conditions %v, silence %q %v; want none", l.Conditions(), what, d)
	}
	if _, err := l.Maintenance(context.Background()); err == nil || !strings.Contains(err.Error(), "absent.sock") {
		t.Errorf("maintenance with no agent: %v, want an error naming the socket", err)
	}
}

// FuzzDecodeLink: whatever comes over the link, decoding and checking
// it returns an error or a value, and never panics.
func FuzzDecodeLink(f *testing.F) {
	for _, seed := range []string{`{"repairs":{"runtime":{"restarted":1}},"budgetRemaining":{"runtime":2}}`,
		`{"reason":"RepairRestarted","message":"m","warning":true}`, `{"target":"kubelet","maxRestarts":5,"window":600000000000,"namespace":"kube-system"}`,
		`{"conditions":[{"type":"RuntimeHung","true":true}],"silences":{"runtime":{"what":"Version","for":5}}}`, `{}{}`, `[`} {
		f.Add(seed)
	}
	f.Fuzz(func(_ *testing.T, s string) {
		var tally nodelink.Tally
		if nodelink.Decode(strings.NewReader(s), &tally) == nil {
			_ = CheckTally(tally)
		}
		var note nodelink.EventNote
		if nodelink.Decode(strings.NewReader(s), &note) == nil {
			_ = CheckEventNote(note)
		}
		var ask nodelink.FleetAsk
		if nodelink.Decode(strings.NewReader(s), &ask) == nil {
			_ = CheckFleetAsk(ask)
		}
		var v nodelink.View
		_ = nodelink.Decode(strings.NewReader(s), &v)
	})
}

// TestAFenceThatWaitsDoesNotHoldRepairBack: while the fence's step waits
// (as it would on a CSI node plugin or an unmount within their deadlines), the link goes on reading the view and repair goes on
// judging, tick after tick.
func TestAFenceThatWaitsDoesNotHoldRepairBack(t *testing.T) {
	dir := shortTempDir(t)
	clk := clocktesting.NewFakeClock(t0)
	judged := make(chan struct{}, 16)
	r := New(Options{Clock: clk, Metrics: NewMetrics(), Conditions: func() []nodelink.Condition {
		select {
		case judged <- struct{}{}:
		default:
		}
		return nil
	}})
	fenceWaits, fenceIn := make(chan struct{}), make(chan struct{}, 1)
	fence := func(context.Context) {
		select {
		case fenceIn <- struct{}{}:
		default:
		}
		<-fenceWaits
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { NewAgentLink(filepath.Join(dir, "absent.sock")).Run(ctx, r, fence, NewMetrics()); close(ran) }()
	defer func() { cancel(); close(fenceWaits); <-ran }()
	<-fenceIn // the fence is stuck in its step
	for n := range 4 {
		select {
		case <-judged:
		case <-time.After(10 * time.Second):
			t.Fatalf("repair judged %d times while the fence waited; want it to go on at every tick", n)
		}
		clk.Step(tick)
	}
}

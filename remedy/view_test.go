package remedy

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"
)

// countingLister counts the cache's reads.
type countingLister struct {
	clientsetNodes
	lists, gets int
}

func (l *countingLister) List() ([]*corev1.Node, error) { l.lists++; return l.clientsetNodes.List() }

func (l *countingLister) Get(name string) (*corev1.Node, error) {
	l.gets++
	return l.clientsetNodes.Get(name)
}

// TestAPassPlansOnlyWhatChanged: with the informer's events (Watched), a
// fleet at rest is not planned again each second; a changed node is
// planned alone; a wait falling due plans its node when it does; and the
// totals stay those of a plan of every node.
func TestAPassPlansOnlyWhatChanged(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	p := DefaultPolicy()
	p.Conditions[0].TaintAfter = dur(time.Minute)
	p.Conditions[0].EvictAfter = nil
	var objs []runtime.Object
	for i := range 1000 {
		objs = append(objs, node(fmt.Sprintf("n%04d", i), "RuntimeHung", corev1.ConditionFalse, t0, t0))
	}
	c, cs := newTestController(t, p, clk, objs...)
	lister := &countingLister{clientsetNodes: clientsetNodes{cs}}
	c.o.Nodes, c.o.Watched = lister, true
	ctx := context.Background()
	c.Pass(ctx)
	if lister.lists != 1 || c.Last().Matching != 1000 {
		t.Fatalf("first pass: %d lists, %d matching; want a full plan", lister.lists, c.Last().Matching)
	}
	for range 30 {
		clk.Step(time.Second)
		c.Pass(ctx)
	}
	if lister.lists != 1 || lister.gets != 0 {
		t.Fatalf("30 s at rest: %d lists, %d reads; want none", lister.lists-1, lister.gets)
	}
	sick := node("n0007", "RuntimeHung", corev1.ConditionTrue, clk.Now(), clk.Now())
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, sick, metav1.UpdateOptions{FieldManager: DefaultWriter}); err != nil {
		t.Fatal(err)
	}
	c.Changed("n0007")
	clk.Step(time.Second)
	c.Pass(ctx)
	if lister.gets != 1 || c.Last().Unhealthy != 1 || tainted(t, cs) != 0 {
		t.Fatalf("one node changed: %d reads, %d unhealthy, %d tainted; want 1, 1, 0", lister.gets, c.Last().Unhealthy, tainted(t, cs))
	}
	gets := lister.gets
	for range 60 {
		clk.Step(time.Second)
		c.Pass(ctx)
	}
	if tainted(t, cs) != 1 || lister.gets-gets > 3 {
		t.Errorf("taintAfter 1m later: %d tainted after %d reads; want 1 after at most 3", tainted(t, cs), lister.gets-gets)
	}
	clocks := NewClocks()
	nodes, _ := clientsetNodes{cs}.List()
	clocks.Observe(p, nodes, clk.Now(), true)
	if full := Decide(p, nodes, clocks, clk.Now()); full.Matching != c.Last().Matching || len(full.Rows) != len(c.Last().Rows) {
		t.Errorf("totals: incremental %d matching, %d rows; full %d, %d", c.Last().Matching, len(c.Last().Rows), full.Matching, len(full.Rows))
	}
}

// BenchmarkPassAtRest is one pass over 5,000 Nodes at rest (1% tainted):
// every node planned (all: as before, and without the informer's events)
// or only what changed (watched: nothing did).
func BenchmarkPassAtRest(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := map[bool]string{false: "all", true: "watched"}[watched]
		b.Run(name, func(b *testing.B) {
			clk := testclock.NewFakeClock(t0)
			p := DefaultPolicy()
			p.MaxUnhealthy.StrVal = "2%"
			nodes := make(staleLister, 5000)
			for i := range nodes {
				status := corev1.ConditionFalse
				if i%100 == 0 {
					status = corev1.ConditionTrue
				}
				nodes[i] = node(fmt.Sprintf("n%04d", i), "RuntimeHung", status, t0, t0)
				if status == corev1.ConditionTrue {
					nodes[i] = taintOf(nodes[i], "RuntimeHung")
				}
			}
			c, _ := newTestController(b, p, clk)
			c.o.Nodes, c.o.Watched = nodes, watched
			ctx := context.Background()
			c.Pass(ctx)
			b.ResetTimer()
			for range b.N {
				c.Pass(ctx)
			}
		})
	}
}

package harness

import (
	"runtime"
	"testing"
)

// waitUntil yields until cond holds: a readiness wait on goroutines of
// this process, no sleep.
func waitUntil(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

func (p *runningPlaces) waitingNow() (all, long int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting, p.longWaiting
}

func TestALongTestGetsTheFirstFreePlace(t *testing.T) {
	p := newPlaces(1)
	p.take(false)
	got := make(chan string, 2)
	go func() { p.take(false); got <- "short" }()
	waitUntil(func() bool { all, _ := p.waitingNow(); return all == 1 })
	go func() { p.take(true); got <- "long" }()
	waitUntil(func() bool { all, long := p.waitingNow(); return all == 2 && long == 1 })
	p.give()
	if first := <-got; first != "long" {
		t.Fatalf("the first free place went to the %s test; want the long one", first)
	}
	p.give()
	if second := <-got; second != "short" {
		t.Fatalf("then %s", second)
	}
}

func TestPlacesAreCounted(t *testing.T) {
	p := newPlaces(2)
	p.take(false)
	p.take(true)
	done := make(chan struct{})
	go func() { p.take(false); close(done) }()
	waitUntil(func() bool { all, _ := p.waitingNow(); return all == 1 })
	select {
	case <-done:
		t.Fatal("a third test ran with two places")
	default:
	}
	p.give()
	<-done
}

func TestLanesAreHeldUntilTheTestEnds(t *testing.T) {
	var inside int
	for i := range 3 {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			Parallel(t, LaneKmsg, LaneSharedContainerd)
			RequireLane(t, LaneKmsg)
			inside++ // the race detector sees two at once
			defer func() { inside-- }()
			if inside != 1 {
				t.Errorf("%d tests inside the lanes at once", inside)
			}
		})
	}
}

package harness

import (
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// A Lane is something on the machine that parallel tests take turns on:
// a test that holds it is the only one using it. Most tests hold none and
// run beside every other one, each with its own runtime, ports and temp
// dirs.
type Lane string

// The lanes of the suites.
const (
	// LaneSharedContainerd is the package's one containerd with its 20
	// containers: a test that freezes it would freeze it for the others.
	LaneSharedContainerd Lane = "the shared containerd"
	// LaneKmsg is /dev/kmsg's user-facility lines: a test that writes
	// lines for rules to match, or opts its hangwatch in to them.
	LaneKmsg Lane = "user-facility lines in /dev/kmsg"
	// LaneRemedyBudget is hangwatch-remedy's Lease and action budget on
	// the package's shared API server.
	LaneRemedyBudget Lane = "hangwatch-remedy's Leases on the shared API server"
	// LaneAdmissionPolicies is the shipped ValidatingAdmissionPolicies on
	// the shared API server: a test that applies them, or removes them,
	// changes what every writer there may do.
	LaneAdmissionPolicies Lane = "the shipped admission policies on the shared API server"
)

// DefaultParallel is how many tests of a package that hold no lane run at
// once, unless HANGWATCH_TEST_PARALLEL says otherwise: most of a real-part
// test is waiting on a freeze or a timeout, so more run than there are
// cores. A test that holds a lane runs besides them: the lane already
// keeps it to one at a time.
const DefaultParallel = 8

// Minutes marks a test that takes minutes: it gets a running place before
// the tests that wait with it for one, so that the longest do not start
// last. It is not a lane: any number of such tests run at once.
const Minutes Lane = "minutes"

var (
	places  = newPlaces(parallelism())
	lanesMu sync.Mutex
	lanes   = map[Lane]*sync.Mutex{}
	holders = map[testing.TB][]Lane{}
)

// Parallel runs t beside the package's other parallel tests: it waits for
// each lane it names, or, naming none, for one of the running places, and
// holds them until t ends (go test's -parallel must allow as many tests
// as the package has, for a test waiting here holds none of go test's).
// Lanes are taken in one order, so two tests never wait on each other.
func Parallel(t *testing.T, need ...Lane) {
	t.Helper()
	serial := parallelism() == 1 // one test at a time, for runs that measure (hack/bench.sh, hack/e2e.sh)
	if !serial {
		t.Parallel()
	}
	long := slices.Contains(need, Minutes)
	need = slices.DeleteFunc(slices.Clone(need), func(l Lane) bool { return l == Minutes })
	slices.Sort(need)
	need = slices.Compact(need)
	for _, l := range need {
		lane(l).Lock()
	}
	placed := len(need) == 0 && !serial
	if placed {
		places.take(long)
	}
	lanesMu.Lock()
	holders[t] = need
	lanesMu.Unlock()
	t.Cleanup(func() {
		lanesMu.Lock()
		delete(holders, t)
		lanesMu.Unlock()
		if placed {
			places.give()
		}
		for _, l := range slices.Backward(need) {
			lane(l).Unlock()
		}
	})
}

// runningPlaces hands out a fixed number of places, first to the tests
// that take minutes.
type runningPlaces struct {
	mu          sync.Mutex
	free        sync.Cond
	left        int
	waiting     int // tests waiting for a place
	longWaiting int // of them, those that take minutes
}

func newPlaces(n int) *runningPlaces {
	p := &runningPlaces{left: n}
	p.free.L = &p.mu
	return p
}

// take waits for a place; a short test also waits while a long one does.
func (p *runningPlaces) take(long bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting++
	if long {
		p.longWaiting++
	}
	for p.left == 0 || (!long && p.longWaiting > 0) {
		p.free.Wait()
	}
	p.left--
	p.waiting--
	if long {
		p.longWaiting--
		p.free.Broadcast() // the short ones may go now, if places are left
	}
}

// give hands a place back.
func (p *runningPlaces) give() {
	p.mu.Lock()
	p.left++
	p.mu.Unlock()
	p.free.Broadcast()
}

// RequireLane fails t unless it holds l (Parallel(t, l)): what uses a lane
// asks for it, so a test cannot use it without its turn.
func RequireLane(t testing.TB, l Lane) {
	t.Helper()
	lanesMu.Lock()
	held := slices.Contains(holders[t], l)
	lanesMu.Unlock()
	if !held {
		t.Fatalf("the test uses %s without its turn: call harness.Parallel(t, harness.%s) first", l, laneName(l))
	}
}

func lane(l Lane) *sync.Mutex {
	lanesMu.Lock()
	defer lanesMu.Unlock()
	if lanes[l] == nil {
		lanes[l] = &sync.Mutex{}
	}
	return lanes[l]
}

func laneName(l Lane) string {
	switch l {
	case LaneSharedContainerd:
		return "LaneSharedContainerd"
	case LaneKmsg:
		return "LaneKmsg"
	case LaneRemedyBudget:
		return "LaneRemedyBudget"
	case LaneAdmissionPolicies:
		return "LaneAdmissionPolicies"
	}
	return string(l)
}

// parallelism is HANGWATCH_TEST_PARALLEL, or DefaultParallel. At 1 the
// package's tests run one after another, lanes and all.
func parallelism() int {
	if n, err := strconv.Atoi(os.Getenv("HANGWATCH_TEST_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return DefaultParallel
}

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
)

// DefaultParallel is how many tests of a package run at once, unless
// HANGWATCH_TEST_PARALLEL says otherwise: most of a real-part test is
// waiting on a freeze or a timeout, so more run than there are cores.
const DefaultParallel = 8

var (
	slots   = make(chan struct{}, parallelism())
	lanesMu sync.Mutex
	lanes   = map[Lane]*sync.Mutex{}
	holders = map[testing.TB][]Lane{}
)

// Parallel runs t beside the package's other parallel tests: it waits for
// each lane it names, then for one of HANGWATCH_TEST_PARALLEL running
// places, and holds them until t ends (go test's -parallel must allow as
// many tests as the package has: a test waiting for a lane takes none of
// the places). Lanes are taken in one order, so two
// tests never wait on each other.
func Parallel(t *testing.T, need ...Lane) {
	t.Helper()
	t.Parallel()
	need = slices.Clone(need)
	slices.Sort(need)
	need = slices.Compact(need)
	for _, l := range need {
		lane(l).Lock()
	}
	slots <- struct{}{}
	lanesMu.Lock()
	holders[t] = need
	lanesMu.Unlock()
	t.Cleanup(func() {
		lanesMu.Lock()
		delete(holders, t)
		lanesMu.Unlock()
		<-slots
		for _, l := range slices.Backward(need) {
			lane(l).Unlock()
		}
	})
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
	}
	return string(l)
}

// parallelism is HANGWATCH_TEST_PARALLEL, or DefaultParallel.
func parallelism() int {
	if n, err := strconv.Atoi(os.Getenv("HANGWATCH_TEST_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return DefaultParallel
}

package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/containerd"
	"github.com/hangwatch/hangwatch/test/harness/hangwatch"
)

// thawBound is how soon after SIGCONT RuntimeHung must be False, whichever
// call caught the freeze: 3 s, and 2 s of slack for a shared 2-core
// machine. When the heartbeat had caught it, the hung beat stood until the
// next Version beat: 7.7 s.
const thawBound = 3*time.Second + 2*time.Second

// TestAThawIsSeenWithin3sWhicheverCallCaughtTheFreeze freezes a real
// containerd under hangwatch's shipped timings six times, at different
// points of its cycle, and thaws it 2 s after RuntimeHung turned True:
// RuntimeHung is False within thawBound of the thaw each time, whether the
// heartbeat's Version (VersionHung) or a list call caught the freeze.
func TestAThawIsSeenWithin3sWhicheverCallCaughtTheFreeze(t *testing.T) {
	harness.Parallel(t, harness.Minutes)
	c := containerd.StartT(t, 1, 1)
	d := hangwatch.StartDaemon(t, c.Endpoint)
	harness.Eventually(t, 30*time.Second, "RuntimeHung False", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
	took := map[string][]time.Duration{}
	for round := range 6 {
		// a different point of the 5 s cycle each round
		harness.Window(t, time.Duration(round)*900*time.Millisecond, "the round's offset", harness.UnlessExited(d))
		thaw := harness.Freeze(t, c)
		var reason string
		harness.Eventually(t, 30*time.Second, "RuntimeHung True", func() bool {
			st, r, _ := d.Condition(t, "RuntimeHung")
			reason = r
			return st == "True"
		}, harness.UnlessExited(d))
		harness.Window(t, 2*time.Second, "2s frozen after RuntimeHung", harness.UnlessExited(d))
		thaw()
		thawed := time.Now()
		harness.Eventually(t, 30*time.Second, "RuntimeHung False after the thaw", func() bool { return d.RuntimeHung(t) == "False" }, harness.UnlessExited(d))
		cleared := time.Since(thawed)
		took[reason] = append(took[reason], cleared)
		t.Logf("round %d: caught by %s, False %v after the thaw", round+1, reason, cleared.Round(time.Millisecond))
		if cleared > thawBound {
			t.Errorf("round %d (%s): RuntimeHung False %v after the thaw, want within %v", round+1, reason, cleared, thawBound)
		}
	}
	var all []time.Duration
	for reason, ds := range took {
		all = append(all, ds...)
		t.Logf("caught by %s: %d rounds, median %v", reason, len(ds), median(ds))
	}
	harness.Measure(t, "thaw_runtimehung_false_median_of_6", median(all))
	t.Logf("%s", fmt.Sprint(took))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

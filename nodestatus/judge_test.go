package nodestatus

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fakeJudge stands in for the engine: a conditions.Set whose changes it
// publishes to its subscribers as the engine does.
type fakeJudge struct {
	set  *conditions.Set
	clk  clock.PassiveClock
	subs []conditions.Subscriber
}

func newFakeJudge(clk clock.PassiveClock, types map[string]conditions.Thresholds) *fakeJudge {
	return &fakeJudge{set: conditions.NewSet(nil, clk.Now(), types), clk: clk}
}

func (j *fakeJudge) subscribe(s conditions.Subscriber) {
	j.subs = append(j.subs, s)
	s.Judged(conditions.Judgement{Cause: conditions.CauseSubscribed, At: j.clk.Now(), Conditions: j.set.Snapshot()})
}

func (j *fakeJudge) publish(jd conditions.Judgement) {
	jd.At, jd.Conditions = j.clk.Now(), j.set.Snapshot()
	for _, s := range j.subs {
		s.Judged(jd)
	}
}

// Restore is the engine's: it carries on onNode and publishes it.
func (j *fakeJudge) Restore(onNode []conditions.Condition) []string {
	took := j.set.Restore(onNode, j.clk.Now())
	j.publish(conditions.Judgement{Cause: conditions.CauseRestored, OnNode: onNode})
	return took
}

// update applies a verdict as an observation judged would.
func (j *fakeJudge) update(condType string, now time.Time, v conditions.Evaluation) {
	jd := conditions.Judgement{Cause: conditions.CauseObserved}
	if before, after, changed := j.set.Update(condType, now, v); changed {
		jd.Changes = []conditions.Change{{Before: before, After: after}}
	}
	j.publish(jd)
}

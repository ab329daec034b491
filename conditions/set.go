package conditions

import (
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
)

// Set holds hangwatch's conditions. It is safe for concurrent use.
type Set struct {
	mu       sync.Mutex
	trackers map[string]*Tracker
	gauge    *metrics.GaugeVec
}

// NewSet starts the given condition types as Unknown and, when reg is not
// nil, exports them as hangwatch_node_condition.
func NewSet(reg metrics.KubeRegistry, now time.Time, types map[string]Thresholds) *Set {
	s := &Set{trackers: map[string]*Tracker{}, gauge: metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "hangwatch_node_condition", StabilityLevel: metrics.ALPHA,
		Help: "hangwatch's node conditions: 1 for the status (true, false, unknown) each condition has now, 0 for the others.",
	}, []string{"condition", "status"})}
	if reg != nil {
		reg.MustRegister(s.gauge)
	}
	for t, th := range types {
		s.trackers[t] = NewTracker(t, th, now)
		s.export(s.trackers[t].Condition())
	}
	return s
}

// Update applies a verdict to one condition and returns the condition
// before and after. Unknown types are ignored.
func (s *Set) Update(condType string, now time.Time, v Evaluation) (before, after Condition, changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.trackers[condType]
	if !ok {
		return Condition{}, Condition{}, false
	}
	before = t.Condition()
	if changed = t.Update(now, v); changed {
		s.export(t.Condition())
	}
	return before, t.Condition(), changed
}

// Restore carries on the conditions read back from the Node (see
// Tracker.Restore) at now and returns the types it took.
func (s *Set) Restore(conds []Condition, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var took []string
	for _, c := range conds {
		if t, ok := s.trackers[c.Type]; ok && t.Restore(c, now) {
			took = append(took, c.Type)
			s.export(t.Condition())
		}
	}
	return took
}

// Types returns the condition types the set holds, sorted.
func (s *Set) Types() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.trackers))
	for t := range s.trackers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Snapshot returns every condition, sorted by type.
func (s *Set) Snapshot() []Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Condition, 0, len(s.trackers))
	for _, t := range s.trackers {
		out = append(out, t.Condition())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func (s *Set) export(c Condition) {
	for _, st := range []Status{StatusTrue, StatusFalse, StatusUnknown} {
		v := 0.0
		if c.Status == st {
			v = 1
		}
		s.gauge.WithLabelValues(c.Type, strings.ToLower(string(st))).Set(v)
	}
}

// Retype makes types the set's condition types: a type that is fresh (a
// new or changed rule) or new starts over as Unknown at now, the others
// keep their trackers, state and transition times, and a type not in
// types leaves the set and its hangwatch_node_condition series.
func (s *Set) Retype(types map[string]Thresholds, fresh map[string]bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.trackers {
		if _, keep := types[t]; !keep {
			delete(s.trackers, t)
			for _, st := range []Status{StatusTrue, StatusFalse, StatusUnknown} {
				s.gauge.Delete(map[string]string{"condition": t, "status": strings.ToLower(string(st))})
			}
		}
	}
	for t, th := range types {
		if _, ok := s.trackers[t]; ok && !fresh[t] {
			continue
		}
		s.trackers[t] = NewTracker(t, th, now)
		s.export(s.trackers[t].Condition())
	}
}

package conditions

import (
	"reflect"
	"sort"
	"time"

	"github.com/hangwatch/hangwatch/observations"
)

// ReloadResult says what a reload did, by condition type, each list sorted.
type ReloadResult struct {
	// Kept are the conditions whose rule is unchanged: state and
	// transition time carry on.
	Kept []string
	// Changed and Added start over from the latest observations.
	Changed, Added []string
	// Removed have no owned rule any more: hangwatch stops writing them,
	// and the Node keeps their last state.
	Removed []string
}

// Reload replaces the rules with specs and the params they read, compiled
// and owned as NewEngine does (each mistake reported with its field path;
// the running rules stay on any). A rule unchanged, reading params that
// did not change, keeps its condition as it is; a new or changed rule
// starts over and is evaluated at once from the latest observations, so it
// need not wait for its inputs' next look. The result is published
// (CauseReloaded).
func (e *Engine) Reload(specs []Spec, params observations.Params) (ReloadResult, error) {
	compiled, err := compileAll(specs, params, e.opts.KernelConditions)
	if err != nil {
		return ReloadResult{}, err
	}
	rules, types := ownedRules(compiled, e.opts)
	var res ReloadResult
	e.judge(func(now time.Time) Judgement {
		paramsChanged := e.opts.Params != params
		e.opts.Params, e.latest[observations.NameParams] = params, params
		var fresh map[string]bool
		res, fresh = e.diffRules(rules, paramsChanged)
		e.set.Retype(types, fresh, now)
		var changes []Change
		for _, r := range e.rules {
			if fresh[r.spec.Type] {
				changes = e.apply(r, now, changes)
			}
		}
		return Judgement{Cause: CauseReloaded, Changes: changes}
	})
	return res, nil
}

// diffRules installs rules, keeping each unchanged rule's compiled form,
// and says which types are fresh. Called with e.mu held.
func (e *Engine) diffRules(rules []*rule, paramsChanged bool) (ReloadResult, map[string]bool) {
	old := map[string]*rule{}
	for _, r := range e.rules {
		old[r.spec.Type] = r
	}
	var res ReloadResult
	fresh := map[string]bool{}
	for i, r := range rules {
		t := r.spec.Type
		prev, ok := old[t]
		switch {
		case !ok:
			res.Added, fresh[t] = append(res.Added, t), true
		case reflect.DeepEqual(prev.spec, r.spec) && (!paramsChanged || !r.readsParams):
			rules[i], res.Kept = prev, append(res.Kept, t)
		default:
			res.Changed, fresh[t] = append(res.Changed, t), true
		}
		delete(old, t)
	}
	for t := range old {
		res.Removed = append(res.Removed, t)
		delete(e.lastErr, t)
	}
	for _, l := range [][]string{res.Kept, res.Changed, res.Added, res.Removed} {
		sort.Strings(l)
	}
	e.rules = rules
	return res, fresh
}

package conditions

import (
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/observations"
)

// Engine turns observations into conditions through the compiled rules.
// It is safe for concurrent use.
type Engine struct {
	pubMu   sync.Mutex // held while judging and publishing, so judgements go out in order
	subs    []Subscriber
	mu      sync.Mutex
	clk     clock.PassiveClock
	set     *Set
	rules   []*rule
	latest  map[string]any
	lastErr map[string]string
	errors  *metrics.CounterVec
	opts    EngineOptions
}

// EngineOptions wire an engine.
type EngineOptions struct {
	// Available are the inputs that will be observed; a rule reading any
	// other input is dropped, so hangwatch never owns a condition it cannot
	// decide (KernelDeadlock without the kernel log, say).
	Available []string
	// Registry exports hangwatch_node_condition and rule errors when set.
	Registry metrics.KubeRegistry
	// Params are the configuration's knobs the rules read as `params`.
	Params observations.Params
	// KernelConditions are the condition types the kernel rules raise,
	// when known: a rule naming another under kernel is refused.
	KernelConditions []string
	// RestoredHold is, by condition type, how long a condition restored
	// True from the Node stays True without this process's own evidence
	// (see Thresholds.RestoredHold).
	RestoredHold map[string]time.Duration
	// BootTime is when the node's kernel booted: a condition restored True
	// that became True before it is not held (Thresholds.HoldSince), so a
	// kernel condition of the last boot (a GPU fallen off the bus, a
	// deadlock) clears once the node has rebooted. Zero: every restore is
	// held.
	BootTime time.Time
}

// NewEngine compiles specs; each mistake is reported with its field path.
func NewEngine(specs []Spec, clk clock.PassiveClock, opts EngineOptions) (*Engine, error) {
	rules, err := compileAll(specs, opts.Params, opts.KernelConditions)
	if err != nil {
		return nil, err
	}
	e := &Engine{clk: clk, latest: map[string]any{observations.NameParams: opts.Params}, lastErr: map[string]string{}, opts: opts,
		errors: metrics.NewCounterVec(&metrics.CounterOpts{
			Name: "hangwatch_condition_rule_errors_total", StabilityLevel: metrics.ALPHA,
			Help: "Evaluations of a condition rule that failed (an expression error); the condition keeps its state.",
		}, []string{"condition"})}
	var types map[string]Thresholds
	e.rules, types = ownedRules(rules, opts)
	if opts.Registry != nil {
		opts.Registry.MustRegister(e.errors)
	}
	e.set = NewSet(opts.Registry, clk.Now(), types)
	return e, nil
}

// ownedRules keeps the rules whose inputs are all observed, with each
// one's thresholds by condition type.
func ownedRules(rules []*rule, opts EngineOptions) ([]*rule, map[string]Thresholds) {
	var owned []*rule
	types := map[string]Thresholds{}
	for _, r := range rules {
		if !subset(r.inputs, opts.Available) {
			klog.InfoS("Condition not owned: one of its inputs is not observed", "type", r.spec.Type, "inputs", r.inputs)
			continue
		}
		owned = append(owned, r)
		th := r.spec.thresholds()
		th.RestoredHold, th.HoldSince = opts.RestoredHold[r.spec.Type], opts.BootTime
		types[r.spec.Type] = th
	}
	return owned, types
}

// Reads tells whether an owned condition's rule reads input.
func (e *Engine) Reads(input string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.rules {
		if slices.Contains(r.inputs, input) {
			return true
		}
	}
	return false
}

// Set returns the conditions the engine owns, to read: a change made
// through it is not published (Restore is the engine's, and is).
func (e *Engine) Set() *Set { return e.set }

// Observe records the latest observation of one input, evaluates the
// rules that read it and publishes the judgement (CauseObserved).
func (e *Engine) Observe(obs observations.Input) {
	input := obs.InputName()
	e.judge(func(now time.Time) Judgement {
		e.latest[input] = activation(obs)
		var changes []Change
		for _, r := range e.rules {
			if slices.Contains(r.inputs, input) {
				changes = e.apply(r, now, changes)
			}
		}
		return Judgement{Cause: CauseObserved, Input: input, Changes: changes}
	})
}

// Restore carries on the conditions read back from the Node (see
// Set.Restore), publishes them (CauseRestored, with onNode) and returns
// the types it took.
func (e *Engine) Restore(onNode []Condition) []string {
	var took []string
	e.judge(func(now time.Time) Judgement {
		took = e.set.Restore(onNode, now)
		return Judgement{Cause: CauseRestored, OnNode: onNode}
	})
	return took
}

// apply evaluates r on the latest observations and applies its verdict,
// appending the change, if any, to changes. Called with e.mu held.
func (e *Engine) apply(r *rule, now time.Time, changes []Change) []Change {
	v, err := r.evaluate(e.latest, now)
	if e.noteError(r.spec.Type, err) {
		return changes
	}
	if before, after, changed := e.set.Update(r.spec.Type, now, v); changed {
		changes = append(changes, Change{Before: before, After: after})
	}
	return changes
}

// noteError counts and logs a failed evaluation, once per distinct error.
func (e *Engine) noteError(condType string, err error) bool {
	if err == nil {
		delete(e.lastErr, condType)
		return false
	}
	if errors.Is(err, errNoInput) {
		return true
	}
	e.errors.WithLabelValues(condType).Inc()
	if e.lastErr[condType] != err.Error() {
		e.lastErr[condType] = err.Error()
		klog.ErrorS(err, "Condition rule failed; the condition keeps its state", "type", condType)
	}
	return true
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

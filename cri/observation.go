package cri

import (
	"slices"
	"time"

	"github.com/hangwatch/hangwatch/observations"
)

// Observation turns a cycle into the `cri` input of the condition rules:
// plain values, no decisions (observations.CRI documents each field).
func (c Cycle) Observation(timeout time.Duration) observations.CRI {
	hung, hungMethods := []string{}, []string{}
	fixed, fixedHung := map[string]bool{}, map[string]bool{}
	slow, failed := 0, 0
	// In the order sent: a beat's call, added after the cycle's, may be older.
	sent := slices.Clone(c.Calls)
	slices.SortStableFunc(sent, func(a, b CallResult) int { return a.Start.Compare(b.Start) })
	for _, r := range sent {
		if r.Class == ClassCanceled {
			continue
		}
		if r.Object == "" {
			fixed[r.Method] = true
		}
		switch r.Class {
		case ClassTimeout:
			hung = append(hung, callName(r))
			if !slices.Contains(hungMethods, r.Method) {
				hungMethods = append(hungMethods, r.Method)
			}
			if r.Object == "" {
				fixedHung[r.Method] = true
			}
		case ClassSlow:
			slow++
		case ClassError, ClassTooLarge:
			failed++
		}
	}
	slices.Sort(hung)
	return observations.CRI{
		Timeout: timeout.String(), TimeoutSeconds: timeout.Seconds(),
		Unreachable: c.refusedEveryCall(),
		HungCalls:   slices.Compact(hung), HungMethods: hungMethods,
		FixedMethods: len(fixed), FixedHung: len(fixedHung),
		SlowCalls: slow, FailedCalls: failed, RuntimeNotReady: NotReady(c.Conditions),
		Sandboxes: c.Sandboxes, Containers: c.Containers,
		DurationSeconds: c.Duration.Seconds(),
	}
}

func callName(r CallResult) string {
	if r.Object == "" {
		return r.Method
	}
	return r.Method + "(" + shortID(r.Object) + ")"
}

// shortID shortens a runtime ID the way crictl prints it.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// refusedEveryCall tells whether the cycle sent calls and the runtime's
// socket refused each one, or closed its connection (Observation's
// Unreachable).
func (c Cycle) refusedEveryCall() bool {
	counted := 0
	for _, r := range c.Calls {
		switch r.Class {
		case ClassCanceled:
			continue
		case ClassUnreachable:
			counted++
		default:
			return false
		}
	}
	return counted > 0
}

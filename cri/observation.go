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
	unreachable, counted, slow, failed := 0, 0, 0, 0
	// In the order sent: a beat's call, added after the cycle's, may be older.
	sent := slices.Clone(c.Calls)
	slices.SortStableFunc(sent, func(a, b CallResult) int { return a.Start.Compare(b.Start) })
	for _, r := range sent {
		if r.Class == ClassCanceled {
			continue
		}
		counted++
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
		case ClassUnreachable:
			unreachable++
		case ClassSlow:
			slow++
		case ClassError, ClassTooLarge:
			failed++
		}
	}
	slices.Sort(hung)
	return observations.CRI{
		Timeout: timeout.String(), TimeoutSeconds: timeout.Seconds(),
		Unreachable: counted > 0 && unreachable == counted,
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

package cri

import (
	"slices"
	"time"
)

// Observation turns a cycle into the `cri` input of the condition rules:
// plain values, no decisions. The keys are documented in the README.
//
//	timeout         string  the per-call timeout, such as "2s"
//	timeoutSeconds  double
//	unreachable     bool    no counted call reached the runtime
//	hungCalls       list    calls past the timeout, "Method" or "Method(id)", sorted
//	hungMethods     list    methods of hungCalls in the order they were sent
//	fixedMethods    int     methods probed without an object (Version, Status, List*...)
//	fixedHung       int     how many of those hung
//	slowCalls       int     calls that answered but past the slow threshold
//	failedCalls     int     calls that failed other than by timing out
//	runtimeNotReady list    required runtime conditions (RuntimeReady, NetworkReady) reported false
//	sandboxes       int     sandboxes listed, -1 when unknown
//	containers      int     containers listed, -1 when unknown
//	durationSeconds double  how long the cycle took
func (c Cycle) Observation(timeout time.Duration) map[string]any {
	hung, hungMethods := []string{}, []string{}
	fixed, fixedHung := map[string]bool{}, map[string]bool{}
	unreachable, counted, slow, failed := 0, 0, 0, 0
	for _, r := range c.Calls {
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
	return map[string]any{
		"timeout": timeout.String(), "timeoutSeconds": timeout.Seconds(),
		"unreachable": counted > 0 && unreachable == counted,
		"hungCalls":   slices.Compact(hung), "hungMethods": hungMethods,
		"fixedMethods": len(fixed), "fixedHung": len(fixedHung),
		"slowCalls": slow, "failedCalls": failed, "runtimeNotReady": NotReady(c.Conditions),
		"sandboxes": c.Sandboxes, "containers": c.Containers,
		"durationSeconds": c.Duration.Seconds(),
	}
}

func callName(r CallResult) string {
	if r.Object == "" {
		return r.Method
	}
	return r.Method + "(" + shortID(r.Object) + ")"
}

package conditions

import (
	"fmt"
	"sort"
	"strings"
)

// Reasons of RuntimeHung.
const (
	ReasonRuntimeResponsive    = "RuntimeResponsive"
	ReasonRuntimeUnreachable   = "RuntimeUnreachable"
	ReasonRuntimeNotResponding = "RuntimeNotResponding"
)

// CallObservation is what one probe saw of one CRI call.
type CallObservation struct {
	Method string
	// Object is the sandbox or container ID of a per-object call.
	Object string
	// Result is ok, slow, timeout, unreachable, too_large, error or canceled;
	// a call still in flight past its timeout is a timeout.
	Result string
}

// RuntimeObservation is one probe cycle of the container runtime.
type RuntimeObservation struct {
	Calls []CallObservation
	// Timeout is the per-call timeout the calls were held to.
	Timeout string
}

// EvaluateRuntimeHung is the RuntimeHung rule: bad when a call timed out or
// is still in flight past its timeout, or when no call reached the runtime.
// Messages name methods, never durations, so a steady state stays stable.
func EvaluateRuntimeHung(o RuntimeObservation) Verdict {
	var hung []string
	fixed, fixedHung, unreachable, counted := map[string]bool{}, map[string]bool{}, 0, 0
	for _, c := range o.Calls {
		if c.Result == "canceled" {
			continue
		}
		counted++
		if c.Object == "" {
			fixed[c.Method] = true
		}
		switch c.Result {
		case "timeout":
			hung = append(hung, callName(c))
			if c.Object == "" {
				fixedHung[c.Method] = true
			}
		case "unreachable":
			unreachable++
		}
	}
	switch {
	case counted > 0 && unreachable == counted:
		return Verdict{Bad: true, Reason: ReasonRuntimeUnreachable,
			Message: "the container runtime's CRI socket does not accept calls"}
	case len(hung) == 0:
		return Verdict{Reason: ReasonRuntimeResponsive, Message: "all probed CRI calls answered within " + o.Timeout}
	}
	reason := firstMethod(o.Calls, "timeout") + "Hung"
	if len(fixed) > 1 && len(fixedHung) == len(fixed) {
		reason = ReasonRuntimeNotResponding
	}
	sort.Strings(hung)
	return Verdict{Bad: true, Reason: reason,
		Message: fmt.Sprintf("CRI calls not answered within %s: %s", o.Timeout, strings.Join(dedupe(hung), ", "))}
}

func callName(c CallObservation) string {
	if c.Object == "" {
		return c.Method
	}
	id := c.Object
	if len(id) > 13 {
		id = id[:13]
	}
	return c.Method + "(" + id + ")"
}

func firstMethod(calls []CallObservation, result string) string {
	for _, c := range calls {
		if c.Result == result {
			return c.Method
		}
	}
	return ""
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

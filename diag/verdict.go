package diag

import (
	"fmt"

	"github.com/hangwatch/hangwatch/cri"
)

// Verdict is diag's one-word answer.
type Verdict string

// The verdicts, from best to worst.
const (
	VerdictHealthy     Verdict = "Healthy"
	VerdictDegraded    Verdict = "Degraded"
	VerdictHung        Verdict = "Hung"
	VerdictUnreachable Verdict = "Unreachable"
)

// verdict is the worst thing seen, with one reason per problem.
func verdict(cfg cri.Config, byMethod map[string][]cri.CallResult, r CRIReport) (Verdict, []string) {
	v := VerdictHealthy
	reasons := []string{}
	worse := func(to Verdict, reason string) {
		if rank(to) > rank(v) {
			v = to
		}
		reasons = append(reasons, reason)
	}
	if err, ok := allUnreachable(byMethod); ok {
		return VerdictUnreachable, []string{"no CRI call reached the runtime: " + err}
	}
	for _, m := range cri.Methods {
		for _, reason := range methodProblems(cfg, m, byMethod[m]) {
			worse(reason.verdict, reason.text)
		}
	}
	for _, c := range r.RuntimeConditions {
		if c.Required && !c.Status {
			worse(VerdictDegraded, fmt.Sprintf("runtime reports %s=false (%s: %s)", c.Type, c.Reason, c.Message))
		}
	}
	if float64(r.LargestResponse.Bytes) >= largeResponseShare*cri.MaxMessageSize {
		worse(VerdictDegraded, fmt.Sprintf("%s response is %d bytes, %.0f%% of the %d-byte gRPC limit",
			r.LargestResponse.Method, r.LargestResponse.Bytes, 100*float64(r.LargestResponse.Bytes)/cri.MaxMessageSize, cri.MaxMessageSize))
	}
	return v, reasons
}

// allUnreachable reports whether every call was unreachable, with an error.
func allUnreachable(byMethod map[string][]cri.CallResult) (string, bool) {
	last := ""
	for _, calls := range byMethod {
		for _, c := range calls {
			if c.Class != cri.ClassUnreachable {
				return "", false
			}
			last = c.Err
		}
	}
	return last, last != ""
}

func rank(v Verdict) int {
	switch v {
	case VerdictDegraded:
		return 1
	case VerdictHung:
		return 2
	case VerdictUnreachable:
		return 3
	}
	return 0
}

type problem struct {
	verdict Verdict
	text    string
}

// methodProblems names what went wrong with one method's calls.
func methodProblems(cfg cri.Config, method string, calls []cri.CallResult) []problem {
	counts := map[cri.Class]int{}
	lastErr := map[cri.Class]cri.CallResult{}
	for _, c := range calls {
		counts[c.Class]++
		lastErr[c.Class] = c
	}
	var out []problem
	if n := counts[cri.ClassTimeout]; n > 0 {
		c := lastErr[cri.ClassTimeout]
		what := method
		if c.Object != "" {
			what = fmt.Sprintf("%s of %s", method, shortID(c.Object))
		}
		out = append(out, problem{VerdictHung, fmt.Sprintf("%s did not answer within %v (%d of %d calls)", what, cfg.Timeout, n, len(calls))})
	}
	for _, cl := range []cri.Class{cri.ClassUnreachable, cri.ClassTooLarge, cri.ClassError} {
		if n := counts[cl]; n > 0 {
			out = append(out, problem{VerdictDegraded, fmt.Sprintf("%s %s (%d of %d calls): %s", method, classText(cl), n, len(calls), lastErr[cl].Err)})
		}
	}
	if n := counts[cri.ClassSlow]; n > 0 {
		out = append(out, problem{VerdictDegraded, fmt.Sprintf("%s slow: %d of %d calls over %v", method, n, len(calls), cfg.SlowThreshold)})
	}
	return out
}

func classText(c cri.Class) string {
	switch c {
	case cri.ClassUnreachable:
		return "unreachable"
	case cri.ClassTooLarge:
		return "response too large"
	}
	return "failed"
}

// shortID shortens a runtime ID the way crictl prints it.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
